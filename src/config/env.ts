/** Configuration, read from the environment once and validated, so a bad value stops start-up with a clear message. */
import { join } from 'node:path';
import { z } from 'zod';
import type { Plan } from '../domain/plan';
import type { StreamOptions } from '../domain/stream';

const capValue = z.coerce.number().int().min(0);
const positive = z.coerce.number().int().min(1);
/** The longest interval a Node timer keeps (about 24.8 days): a longer one would fire at once, and on and on. */
const MAX_TIMER_MS = 2_147_483_647;
const ZLogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
export type LogLevel = z.infer<typeof ZLogLevel>;

const ZEnv = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'must start with mongodb:// or mongodb+srv://')
    .optional(),
  MONGODB_DB: z.string().regex(/^[A-Za-z0-9_-]{1,63}$/, 'must be 1-63 letters, digits, _ or -').default('audit_ledger'),
  DATA_DIR: z.string().default('./data'),
  // No default here: the service's is info, the CLI's (which logs to stderr beside its answer) warn.
  LOG_LEVEL: ZLogLevel.optional(),
  // Pinned: the data files under DATA_DIR must keep opening after a dependency upgrade.
  MONGOMS_VERSION: z.string().regex(/^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$/, 'must be a MongoDB version, e.g. 7.0.14').default('7.0.14'),
  PLAN_CAP_FREE: capValue.default(10_000),
  PLAN_CAP_PRO: capValue.default(1_000_000),
  PLAN_CAP_ENTERPRISE: capValue.default(100_000_000),
  PUBLIC_URL: z.url().optional(),
  INSTANCE_URL: z.url({ protocol: /^https?$/ }).optional(),
  INTERNAL_HOST: z.string().default('127.0.0.1'),
  INTERNAL_PORT: z.coerce.number().int().min(0).max(65535).default(0),
  INGEST_WRITERS: positive.max(64).default(1),
  INGEST_COMMIT_DELAY_MS: z.coerce.number().int().min(0).max(1000).default(20),
  TRUST_PROXY: z.enum(['true', 'false']).default('false'),
  TRUST_PROXY_HOPS: positive.max(10).default(1),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(0),
  METRICS_HOST: z.string().default('127.0.0.1'),
  DB_TIMEOUT_MS: positive.max(60_000).default(5000),
  METADATA_MAX_BYTES: positive.max(1024 * 1024).default(64 * 1024),
  LIST_MAX_BYTES: positive.default(4 * 1024 * 1024),
  TRPC_MAX_BATCH: positive.max(1000).default(10),
  RATE_LIMIT_PER_SECOND: positive.default(200),
  RATE_LIMIT_BURST: positive.default(400),
  AUTH_FAILURES_PER_SECOND: positive.default(10),
  AUTH_FAILURES_BURST: positive.default(200),
  EXPORTS_PER_ORG: positive.default(2),
  EXPORT_TIMEOUT_MS: positive.default(10 * 60_000),
  BATCH_MAX_EVENTS: positive.max(10_000).default(1000),
  BATCH_MAX_BYTES: positive.max(64 * 1024 * 1024).default(5 * 1024 * 1024),
  IDEMPOTENCY_TTL_HOURS: z.coerce.number().positive().max(24 * 365).default(24),
  LEDGER_NAME: z.string().regex(/^[\x21-\x2a\x2c-\x7e]{1,200}$/, 'must be printable ASCII without spaces or +, e.g. ledger.example.com').optional(),
  LEDGER_SIGNING_KEY_FILE: z.string().min(1).optional(),
  LEDGER_CHECKPOINT_INTERVAL_MS: positive.min(10).max(3_600_000).default(1000),
  LEDGER_AUDIT_INTERVAL_MS: z.coerce.number().int().min(0).max(MAX_TIMER_MS).default(0),
  LEDGER_WITNESS_POLICY: z.string().min(1).optional(),
  LEDGER_INSTALLATION_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  STREAM_SCAN_INTERVAL_MS: positive.min(100).max(600_000).default(2000),
  STREAM_POLL_MS: positive.min(50).max(600_000).default(1000),
  STREAM_FAILING_AFTER_MS: positive.default(10 * 60_000),
  STREAM_MAX_BACKOFF_MS: positive.min(100).default(5 * 60_000),
  STREAM_CONCURRENCY: positive.max(1024).default(64),
  STREAM_TIMEOUT_MS: positive.min(100).max(600_000).default(30_000),
  STREAM_ALLOW_PRIVATE_DESTINATIONS: z.enum(['true', 'false']).default('false'),
  SMTP_URL: z.url({ protocol: /^smtps?$/ }).optional(),
  MAIL_FROM: z.string().min(3).max(254).optional(),
  VIEWER_TOKEN_MAX_MINUTES: positive.max(24 * 60).default(60),
  RETENTION_MIN_DAYS: positive.max(36_500).default(30),
  RETENTION_MAX_DAYS: positive.max(36_500).optional(),
  RETENTION_NOTICE_DAYS: z.coerce.number().int().min(1).max(365).default(7),
  RETENTION_PRUNE_INTERVAL_MS: z.coerce.number().int().min(0).max(MAX_TIMER_MS).default(3_600_000),
  VIEWER_FRAME_ANCESTORS: z.string().regex(/^[\x21-\x7e]+( [\x21-\x7e]+)*$/, 'must be CSP sources separated by spaces, e.g. https://app.example.com').default('*'),
});

export type Env = z.infer<typeof ZEnv>;


/** What one request may cost the service; each is a variable above, with its default there (docs/configuration.md). */
export interface Limits {
  /** `metadata` as JSON text, in bytes. */
  metadataBytes: number;
  /** A list page's events as JSON, in bytes: a page ends early rather than exceed it. */
  listPageBytes: number;
  /** Calls in one /trpc batch. */
  trpcMaxBatch: number;
  /** Requests per second per API key (token bucket), and the burst it allows. */
  ratePerSecond: number;
  rateBurst: number;
  /** Failed authentications per second per client address (token bucket), and the burst it allows. */
  authFailuresPerSecond: number;
  authFailuresBurst: number;
  /** Exports running at once per organization, and how long one may run. */
  exportsPerOrg: number;
  exportTimeoutMs: number;
  /** Events in one POST /v1/events/batch, and its body in bytes. */
  batchEvents: number;
  batchBytes: number;
}


export interface Config {
  port: number;
  host: string;
  mongodbUri: string | undefined;
  mongodbDb: string;
  dataDir: string;
  /** The embedded MongoDB's version (used when MONGODB_URI is unset). */
  embeddedMongoVersion: string;
  /** The service's log level (default info). */
  logLevel: LogLevel;
  /** The admin CLI's log level, for what it logs to stderr (default warn: its answer is what a person reads). */
  cliLogLevel: LogLevel;
  planCaps: Record<Plan, number>;
  publicUrl: string | undefined;
  /** Where the other instances on the same database reach this one's internal listener (default: http://INTERNAL_HOST:<its port>). */
  instanceUrl: string | undefined;
  /** The internal listener, for the other instances only: never the public port. */
  internalHost: string;
  internalPort: number;
  /** How many of the instances on one database write events; the others forward to them. */
  ingestWriters: number;
  /** How long a writer that its CPU quota throttles lets its next round gather (EventWriter). */
  ingestCommitDelayMs: number;
  trustProxy: boolean;
  /** Proxies in front of the service whose X-Forwarded-For entries are trusted, counted from the right. */
  trustProxyHops: number;
  metricsPort: number;
  metricsHost: string;
  /** How long a request waits for an unreachable database before it is answered 503. */
  dbTimeoutMs: number;
  /** How long an Idempotency-Key is remembered. */
  idempotencyTtlMs: number;
  /** The ledger's key name; unset: the host and port of PUBLIC_URL (or localhost:PORT), then `/ledger`. */
  ledgerName: string | undefined;
  /** The signing key's file (default `<DATA_DIR>/ledger-signing-key`), created at first start. */
  ledgerKeyFile: string;
  ledgerIntervalMs: number;
  /** The background audit's period; 0: off. */
  ledgerAuditIntervalMs: number;
  /** A c2sp.org/tlog-policy file naming the installation log's witnesses; unset: no witnesses. */
  witnessPolicyFile: string | undefined;
  /** A bearer token the installation log's tiles API asks for; unset: public. */
  installationToken: string | undefined;
  /** How this instance delivers log streams. */
  streams: StreamOptions;
  /** Invitations by mail: an SMTP server (smtp:// or smtps://, credentials in the URL) and the sender; unset: links are only shown. */
  mail: { smtpUrl: string; from: string } | null;
  /** Viewer tokens: the longest lifetime a token may be minted with, and who may frame /viewer (CSP frame-ancestors). */
  viewer: { maxMinutes: number; frameAncestors: string };
  /** Retention policies' bounds (max null: "for ever" allowed), the notice a shorter policy waits, and how often the prune job runs (0: never). */
  retention: { minDays: number; maxDays: number | null; noticeDays: number; pruneIntervalMs: number };
  limits: Limits;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Parses configuration from an environment; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = ZEnv.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    mongodbUri: e.MONGODB_URI,
    mongodbDb: e.MONGODB_DB,
    dataDir: e.DATA_DIR,
    embeddedMongoVersion: e.MONGOMS_VERSION,
    logLevel: e.LOG_LEVEL ?? 'info',
    cliLogLevel: e.LOG_LEVEL ?? 'warn',
    planCaps: { free: e.PLAN_CAP_FREE, pro: e.PLAN_CAP_PRO, enterprise: e.PLAN_CAP_ENTERPRISE },
    publicUrl: e.PUBLIC_URL,
    instanceUrl: e.INSTANCE_URL,
    internalHost: e.INTERNAL_HOST,
    internalPort: e.INTERNAL_PORT,
    ingestWriters: e.INGEST_WRITERS,
    ingestCommitDelayMs: e.INGEST_COMMIT_DELAY_MS,
    trustProxy: e.TRUST_PROXY === 'true',
    trustProxyHops: e.TRUST_PROXY_HOPS,
    metricsPort: e.METRICS_PORT,
    metricsHost: e.METRICS_HOST,
    dbTimeoutMs: e.DB_TIMEOUT_MS,
    idempotencyTtlMs: Math.round(e.IDEMPOTENCY_TTL_HOURS * 3_600_000),
    ledgerName: e.LEDGER_NAME,
    ledgerKeyFile: e.LEDGER_SIGNING_KEY_FILE ?? join(e.DATA_DIR, 'ledger-signing-key'),
    ledgerIntervalMs: e.LEDGER_CHECKPOINT_INTERVAL_MS,
    ledgerAuditIntervalMs: e.LEDGER_AUDIT_INTERVAL_MS,
    witnessPolicyFile: e.LEDGER_WITNESS_POLICY,
    installationToken: e.LEDGER_INSTALLATION_TOKEN,
    streams: {
      scanIntervalMs: e.STREAM_SCAN_INTERVAL_MS,
      pollMs: e.STREAM_POLL_MS,
      failingAfterMs: e.STREAM_FAILING_AFTER_MS,
      maxBackoffMs: e.STREAM_MAX_BACKOFF_MS,
      concurrency: e.STREAM_CONCURRENCY,
      timeoutMs: e.STREAM_TIMEOUT_MS,
      allowPrivate: e.STREAM_ALLOW_PRIVATE_DESTINATIONS === 'true',
    },
    mail: e.SMTP_URL ? { smtpUrl: e.SMTP_URL, from: e.MAIL_FROM ?? `audit-ledger@${new URL(e.SMTP_URL).hostname}` } : null,
    viewer: { maxMinutes: e.VIEWER_TOKEN_MAX_MINUTES, frameAncestors: e.VIEWER_FRAME_ANCESTORS },
    retention: { minDays: e.RETENTION_MIN_DAYS, maxDays: e.RETENTION_MAX_DAYS ?? null, noticeDays: e.RETENTION_NOTICE_DAYS, pruneIntervalMs: e.RETENTION_PRUNE_INTERVAL_MS },
    limits: {
      metadataBytes: e.METADATA_MAX_BYTES,
      listPageBytes: e.LIST_MAX_BYTES,
      trpcMaxBatch: e.TRPC_MAX_BATCH,
      ratePerSecond: e.RATE_LIMIT_PER_SECOND,
      rateBurst: e.RATE_LIMIT_BURST,
      authFailuresPerSecond: e.AUTH_FAILURES_PER_SECOND,
      authFailuresBurst: e.AUTH_FAILURES_BURST,
      exportsPerOrg: e.EXPORTS_PER_ORG,
      exportTimeoutMs: e.EXPORT_TIMEOUT_MS,
      batchEvents: e.BATCH_MAX_EVENTS,
      batchBytes: e.BATCH_MAX_BYTES,
    },
  };
}
