/** Wires repositories and services for one database; the app, the CLI and the tests all start here. */
import type { Db } from 'mongodb';
import type { Logger } from 'pino';
import { type Config, DEFAULT_LIMITS, type Limits } from '../config/env';
import { AccountRepository } from '../db/accountRepository';
import { ApiKeyRepository } from '../db/apiKeyRepository';
import { AuthAttemptRepository } from '../db/authAttemptRepository';
import { collections, ensureIndexes, type Collections } from '../db/database';
import { OrgRepository } from '../db/orgRepository';
import { SessionRepository } from '../db/sessionRepository';
import type { Clock } from '../domain/time';
import { TokenBuckets } from '../domain/tokenBuckets';
import { EventWriter } from '../ingest/eventWriter';
import { Ingest } from '../ingest/ingest';
import { InstanceAuth } from '../ingest/instanceAuth';
import { AuditSchedule } from '../ledger/auditSchedule';
import { Ledger, type LedgerOptions } from '../ledger/ledger';
import { AccountService } from './accounts';
import { ApiKeyService } from './apiKeys';
import { ApiKeyAuthenticator } from './auth';
import { AuthThrottle, DEFAULT_THROTTLE, type ThrottlePolicy } from './authThrottle';
import { EventService } from './events';
import { LedgerService } from './ledger';
import { DEFAULT_IDEMPOTENCY_TTL_MS, IdempotentWrites } from './idempotency';
import { UsageService } from './usage';

export interface Services {
  db: Db;
  collections: Collections;
  orgs: OrgRepository;
  apiKeys: ApiKeyRepository;
  auth: ApiKeyAuthenticator;
  /** Where events are written: here, or forwarded to the instance that writes their organization. */
  ingest: Ingest;
  /** Each organization's signed Merkle log of its events. */
  ledger: Ledger;
  /** The ledger's read side for the API: key, checkpoints, proofs. */
  ledgerReads: LedgerService;
  /** The background audit (started by main.ts when LEDGER_AUDIT_INTERVAL_MS is set). */
  ledgerAudit: AuditSchedule;
  events: EventService;
  /** Writes with an Idempotency-Key (used by `events`; here for its metrics). */
  idempotent: IdempotentWrites;
  accounts: AccountService;
  keys: ApiKeyService;
  usage: UsageService;
  /** Dashboard calls per session, at the rate API keys get (RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST). */
  sessionRate: TokenBuckets;
  clock: Clock;
  log: Logger;
  limits: Limits;
}

export async function createServices(
  db: Db,
  config: Pick<Config, 'planCaps'> & { limits?: Limits; ingestWriters?: number; idempotencyTtlMs?: number; ledger?: LedgerOptions },
  clock: Clock,
  log: Logger,
  options: { throttle?: ThrottlePolicy } = {},
): Promise<Services> {
  const c = collections(db);
  await ensureIndexes(c);
  const orgs = new OrgRepository(c, config.planCaps);
  const apiKeys = new ApiKeyRepository(c);
  const auth = new ApiKeyAuthenticator(apiKeys, clock, log);
  const forgetKey = (hash: string) => { auth.forget(hash); };
  // Without options (the admin CLI), the ledger serves reads and never signs.
  const ledger = new Ledger(c, config.ledger ?? { name: 'unsigned', signer: null, intervalMs: 1000 }, log);
  // Instances authenticate each other with a key derived from the signing key file they share.
  const instanceAuth = config.ledger?.signer ? InstanceAuth.fromSigner(config.ledger.signer) : InstanceAuth.alone();
  const ingest = new Ingest(c, new EventWriter(c, orgs, apiKeys, clock, log, forgetKey, (docs) => { ledger.stored(docs); }), instanceAuth, log, forgetKey, config.ingestWriters);
  const limits = config.limits ?? DEFAULT_LIMITS;
  const idempotent = new IdempotentWrites(c, ingest, clock, log, config.idempotencyTtlMs ?? DEFAULT_IDEMPOTENCY_TTL_MS);
  const events = new EventService(c, ingest, idempotent, clock, ledger, limits);
  const throttle = new AuthThrottle(new AuthAttemptRepository(c), options.throttle ?? DEFAULT_THROTTLE);
  return {
    db,
    collections: c,
    orgs,
    apiKeys,
    auth,
    ingest,
    ledger,
    ledgerReads: new LedgerService(c, ledger, events),
    ledgerAudit: new AuditSchedule(c, config.ledger?.signer ?? null, log),
    events,
    idempotent,
    accounts: new AccountService(new AccountRepository(c), new SessionRepository(c), orgs, throttle, clock, log),
    keys: new ApiKeyService(apiKeys, auth, clock),
    usage: new UsageService(events, orgs, clock),
    sessionRate: new TokenBuckets(limits.ratePerSecond, limits.rateBurst),
    clock,
    log,
    limits,
  };
}
