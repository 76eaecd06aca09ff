/**
 * The composition root: wires repositories and services for one database, and gives each surface what it
 * uses: the API's procedures (`api`, the tRPC context), the HTTP app around them (`http`) and the
 * background jobs (`jobs`). The app, the CLI and the tests all start here; `parts` is for the tests (and
 * for main.ts's start-up hint, which asks whether any organization exists).
 */
import type { Db } from 'mongodb';
import type { Logger } from 'pino';
import type { Config, Limits } from '../config/env';
import { ActiveKeys } from '../db/apiKeyRepository';
import { Stores } from '../db/stores';
import { collections, ensureIndexes } from '../db/database';
import type { Clock } from '../domain/time';
import { TokenBuckets } from '../domain/tokenBuckets';
import { EventWriter } from '../ingest/eventWriter';
import { Ingest, type IngestStats } from '../ingest/ingest';
import { InstanceAuth } from '../ingest/instanceAuth';
import { AuditSchedule } from '../ledger/auditSchedule';
import { LedgerIntegrator, type LedgerOptions } from '../ledger/integrator';
import { LedgerReader } from '../ledger/reader';
import { sealLegacyRows, signedSizeOf } from '../ledger/legacyRows';
import { Witnesses } from '../ledger/witnesses';
import type { Policy } from '../domain/ledger/witnessFormats';
import { AccountService } from './accounts';
import { ApiKeyService } from './apiKeys';
import { ProducerKeys } from './producerKeys';
import { ApiKeyAuthenticator } from './auth';
import { AuthThrottle, DEFAULT_THROTTLE, type ThrottlePolicy } from './authThrottle';
import { EventService } from './events';
import { LedgerService } from './ledger';
import { type IdempotencyStats, IdempotentWrites } from './idempotency';
import { UsageService } from './usage';
import { StreamService } from './streams';
import { StreamDeliverer, type StreamStats } from '../streams/deliverer';
import { SecretBox } from '../streams/secretBox';
import { keyDerivedFrom } from '../domain/ledger/note';
import { Mailer } from './mailer';
import { MemberService } from './members';
import { SelfAudit } from './selfAudit';
import { RowMac } from '../domain/ledger/rowMac';
import { ViewerTokens } from './viewer';
import { RetentionService } from './retention';
import { EventSource } from '../streams/eventSource';
import { job, type Job, Lifecycle, Periodic } from './jobs';

/** What the API's procedures call: the tRPC context's `services`, and the REST routes beside tRPC. */
export interface ApiServices {
  accounts: AccountService;
  /** Members, roles and invitations. */
  members: MemberService;
  events: EventService;
  /** The ledger's read side: key, checkpoints, proofs, tiles. */
  ledgerReads: LedgerService;
  /** Log streams, managed (delivery is a job). */
  streams: StreamService;
  /** Retention policies, legal holds and erasure (pruning is a job). */
  retention: RetentionService;
  keys: ApiKeyService;
  usage: UsageService;
  /** Viewer tokens for an organization's customers. */
  viewerTokens: ViewerTokens;
  /** Dashboard calls per session, at the rate API keys get (RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST). */
  sessionRate: TokenBuckets;
  limits: Limits;
  clock: Clock;
}

/** The services' plain counters, read when metrics are scraped. */
export interface ServiceStats {
  ingest: IngestStats;
  idempotency: IdempotencyStats;
  ledger: LedgerIntegrator['stats'];
  audit: AuditSchedule['stats'];
  /** Submissions to the installation log's witnesses by outcome, and the alarms raised (null: no witnesses). */
  witnesses: Witnesses['counts'] | null;
  /** Log streams this instance delivers. */
  streams: StreamStats;
  /** The self-audit outbox's drain: records found foreign (not the admin CLI's). */
  selfAudit: SelfAudit['stats'];
  /** Rows met without a valid MAC, by kind, and those moved aside. */
  foreign: Stores['foreign']['counts'];
}

/** What the HTTP app uses around the procedures. */
export interface HttpServices {
  api: ApiServices;
  auth: ApiKeyAuthenticator;
  /** Writes what other instances forward (the internal listener); its instance count shares the installation's rates. */
  ingest: Ingest;
  /** Records each export run in the organization's log. */
  selfAudit: Pick<SelfAudit, 'exportRun'>;
  /** Resolves when the database answers (readiness). */
  ping: () => Promise<void>;
  stats: () => ServiceStats;
  log: Logger;
}

/** How often this instance runs its periodic jobs; 0 (or false): the job does not run here. */
export interface JobSettings {
  /** Draining the admin CLI's self-audit outbox. */
  selfAuditIntervalMs: number;
  /** The background ledger audit (LEDGER_AUDIT_INTERVAL_MS). */
  ledgerAuditIntervalMs: number;
  /** Pruning by retention policy (RETENTION_PRUNE_INTERVAL_MS). */
  pruneIntervalMs: number;
  /** Whether this instance delivers log streams. */
  deliverStreams: boolean;
}

/** Every part, for the tests (white-box) and the jobs; no surface takes this whole. */
export interface Parts extends ApiServices {
  db: Db;
  stores: Stores;
  auth: ApiKeyAuthenticator;
  /** Where events are written: here, or forwarded to the instance that writes their organization. */
  ingest: Ingest;
  /** Integrates each organization's events into its signed Merkle log (the write side, in rounds). */
  integrator: LedgerIntegrator;
  /** The installation log's witnesses (null: no policy, or this process signs nothing). */
  witnesses: Witnesses | null;
  ledgerAudit: AuditSchedule;
  /** Writes with an Idempotency-Key (used by `events`; here for its metrics). */
  idempotent: IdempotentWrites;
  /** The service's own audit events in each organization's log. */
  selfAudit: SelfAudit;
  /** Invitation mail (null: SMTP_URL unset). */
  mailer: Mailer | null;
  streamDelivery: StreamDeliverer;
  log: Logger;
}

export interface Container {
  api: ApiServices;
  http: HttpServices;
  /**
   * This instance's background jobs in start order (they stop in the reverse one). `serving` are the
   * caller's own, started after the writer, the ledger and the periodic jobs and before the log streams,
   * whose share of the streams depends on the live instances (main.ts: its listeners, then joining the
   * instance list).
   */
  jobs: (settings: JobSettings, serving?: readonly Job[]) => Lifecycle;
  parts: Parts;
}

export async function createServices(
  db: Db,
  /** From loadConfig, the one source of every default; `ledger` where this process signs (without it, the ledger serves reads and never signs). */
  config: Pick<Config, 'planCaps' | 'limits' | 'ingestWriters' | 'ingestCommitDelayMs' | 'idempotencyTtlMs' | 'ledgerIntervalMs' | 'streams' | 'publicUrl' | 'mail' | 'viewer' | 'retention'> & { ledger?: LedgerOptions & { witnessPolicy?: Policy | null } },
  clock: Clock,
  log: Logger,
  options: { throttle?: ThrottlePolicy } = {},
): Promise<Container> {
  const c = collections(db);
  await ensureIndexes(c);
  const signer = config.ledger?.signer ?? null;
  // FerretDB reads a whole organization for a range of sequence numbers; point reads reach its GIN index.
  const buildInfo = await db.command({ buildInfo: 1 });
  // Rows the service writes carry a MAC under a key derived from the key file (db/rowMacs.ts).
  const rowMac = signer ? RowMac.fromSigner(signer) : null;
  const stores = new Stores(c, { log, rowMac, planCaps: config.planCaps, pointReads: typeof buildInfo.ferretdbVersion === 'string' });
  const { orgs, apiKeys } = stores;
  // Rows of versions before MACs are sealed where a signed checkpoint covers them, before anything runs.
  if (signer) await sealLegacyRows(stores.ledger, signer, clock.now(), log);
  const auth = new ApiKeyAuthenticator(apiKeys, clock, log);
  const forgetKey = (hash: string) => { auth.forget(hash); };

  // The ledger. Without `config.ledger` (the admin CLI) it serves reads and never signs.
  const ledgerOptions = config.ledger ?? { name: 'unsigned', signer: null, intervalMs: config.ledgerIntervalMs };
  const readerOptions = { name: ledgerOptions.name, verifier: ledgerOptions.signer, intervalMs: ledgerOptions.intervalMs };
  const policy = config.ledger?.witnessPolicy;
  // The witnesses read the installation log as stored; an alarm of theirs halts it.
  const witnesses = policy && signer
    ? new Witnesses({ policy, store: stores.witnesses, installation: new LedgerReader(stores.ledger, readerOptions, null, clock).installation(), signer, log, onAlarm: (reason) => { integrator.haltInstallation(reason); } })
    : null;
  const integrator = new LedgerIntegrator({ ...ledgerOptions, store: stores.ledger, clock, log, witnessing: witnesses });
  const ledgerReader = new LedgerReader(stores.ledger, readerOptions, signer ? integrator : null, clock);

  // Writing events: here, or at the instance that writes the organization (instances authenticate each
  // other with a key derived from the signing key file they share).
  const instanceAuth = signer ? InstanceAuth.fromSigner(signer) : InstanceAuth.alone();
  const streamEvents = new EventSource(stores.streams);
  const writer = new EventWriter({
    inserts: stores.inserts,
    readerOf: (tenant) => stores.events(tenant),
    orgs,
    keys: new ActiveKeys(apiKeys),
    clock,
    log,
    onInactiveKey: forgetKey,
    onStored: (docs, hashes) => {
      integrator.stored(docs, hashes);
      streamEvents.add(docs);
    },
    commitDelayMs: config.ingestCommitDelayMs,
    rowMac,
    signedFloor: async (tenant) => (signer ? signedSizeOf(stores.ledger, signer, tenant) : 0),
  });
  const ingest = new Ingest(stores, writer, instanceAuth, log, forgetKey, config.ingestWriters);
  const { limits } = config;
  const idempotent = new IdempotentWrites(stores, ingest, clock, log, config.idempotencyTtlMs);
  const producers = new ProducerKeys(stores.producerClaims, apiKeys, clock);
  const events = new EventService(stores, ingest, idempotent, clock, integrator, limits, producers);
  // The admin CLI seals its outbox records with the row key from the key file; without it nothing is drained.
  const selfAudit = new SelfAudit(ingest, stores.outbox, rowMac, clock, log);

  const box = SecretBox.fromSigner(signer);
  const streamDelivery = new StreamDeliverer({ store: stores.streams, events: streamEvents, ledger: ledgerReader, instances: ingest.instances, box, options: config.streams, clock, log: log.child({ component: 'streams' }) });
  const throttle = new AuthThrottle(stores.authAttempts, options.throttle ?? DEFAULT_THROTTLE);
  const accounts = new AccountService({ accounts: stores.accounts, members: stores.members, sessions: stores.sessions, orgs, throttle, audit: selfAudit, clock, log });
  const mailer = config.mail ? new Mailer(config.mail.smtpUrl, config.mail.from) : null;
  const viewerSecret = signer ? keyDerivedFrom(signer, 'audit-ledger/viewer-token/v1') : null;
  const ledgerAudit = new AuditSchedule(orgs, stores.ledger, stores.witnesses, signer, log);
  const retention = new RetentionService({
    store: stores.retention,
    tenants: () => orgs.ids(),
    leases: stores.exportLeases,
    ledger: {
      signedSize: async (tenant) => (await ledgerReader.of(tenant).newest())?.size ?? 0,
      integrate: (tenant, seq) => integrator.integrate(tenant, { storedTo: seq }),
    },
    audit: selfAudit,
    options: config.retention,
    clock,
    log: log.child({ component: 'retention' }),
  });

  const api: ApiServices = {
    accounts,
    members: new MemberService({ members: stores.members, invitations: stores.invitations, sessions: stores.sessions, orgs, accounts, audit: selfAudit, mailer, publicUrl: config.publicUrl, clock, log }),
    events,
    ledgerReads: new LedgerService(ledgerReader, events, witnesses),
    streams: new StreamService(stores.streams, (tenant) => stores.events(tenant), box, streamDelivery, selfAudit, clock),
    retention,
    keys: new ApiKeyService(apiKeys, auth, selfAudit, clock, producers),
    usage: new UsageService(events, orgs, clock),
    viewerTokens: new ViewerTokens(viewerSecret, apiKeys, { maxMinutes: config.viewer.maxMinutes, publicUrl: config.publicUrl }, clock),
    // Sessions too get the installation's rate from all instances together (src/http/rateLimit.ts).
    sessionRate: new TokenBuckets(limits.ratePerSecond, limits.rateBurst, () => ingest.instances.share),
    limits,
    clock,
  };
  const http: HttpServices = {
    api,
    auth,
    ingest,
    selfAudit,
    ping: async () => { await db.command({ ping: 1 }); },
    stats: () => ({
      ingest: ingest.stats,
      idempotency: idempotent.stats,
      ledger: integrator.stats,
      audit: ledgerAudit.stats,
      witnesses: witnesses?.counts ?? null,
      streams: streamDelivery.stats,
      selfAudit: selfAudit.stats,
      foreign: stores.foreign.counts,
    }),
    log,
  };
  const parts: Parts = { ...api, db, stores, auth, ingest, integrator, witnesses, ledgerAudit, idempotent, selfAudit, mailer, streamDelivery, log };

  const jobs = (settings: JobSettings, serving: readonly Job[] = []): Lifecycle => {
    const periodic = (name: string, intervalMs: number, run: () => Promise<unknown>) => (intervalMs > 0 ? [new Periodic(name, intervalMs, run, log)] : []);
    return new Lifecycle([
      // Closed last: what the jobs below still send while they stop.
      ...(mailer ? [job('mail', () => undefined, () => { mailer.close(); })] : []),
      // Only reads: stopped after the ledger's last rounds, so that a long pass cannot hold them up.
      ...periodic('ledger-audit', settings.ledgerAuditIntervalMs, () => ledgerAudit.runOnce()),
      // Stopped after everything that writes: it integrates what was stored here before the process ends.
      ...(signer ? [job('ledger', () => { integrator.start(); }, () => integrator.stop())] : []),
      // Stopped once nothing sends it more: lets every write in flight finish, closes the forwarding connections.
      job('ingest', () => undefined, () => ingest.stop()),
      ...periodic('self-audit', settings.selfAuditIntervalMs, () => selfAudit.drainOutbox()),
      ...periodic('retention', settings.pruneIntervalMs, () => retention.pruneAll()),
      ...serving,
      ...(settings.deliverStreams ? [job('streams', () => { streamDelivery.start(); }, () => streamDelivery.stop())] : []),
    ], log);
  };
  return { api, http, jobs, parts };
}
