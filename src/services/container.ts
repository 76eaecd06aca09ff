/** Wires repositories and services for one database; the app, the CLI and the tests all start here. */
import type { Db } from 'mongodb';
import type { Logger } from 'pino';
import type { Config, Limits } from '../config/env';
import { AccountRepository } from '../db/accountRepository';
import { ActiveKeys, type ApiKeyRepository } from '../db/apiKeyRepository';
import { Stores } from '../db/stores';
import { AuthAttemptRepository } from '../db/authAttemptRepository';
import { collections, ensureIndexes } from '../db/database';
import { OrgRepository } from '../db/orgRepository';
import { SessionRepository } from '../db/sessionRepository';
import type { Clock } from '../domain/time';
import { TokenBuckets } from '../domain/tokenBuckets';
import { EventWriter } from '../ingest/eventWriter';
import { Ingest } from '../ingest/ingest';
import { InstanceAuth } from '../ingest/instanceAuth';
import { AuditSchedule } from '../ledger/auditSchedule';
import { LedgerIntegrator, type LedgerOptions } from '../ledger/integrator';
import { LedgerReader } from '../ledger/reader';
import { sealLegacyRows, signedSizeOf } from '../ledger/legacyRows';
import { Witnesses } from '../ledger/witnesses';
import type { Policy } from '../domain/ledger/witnessFormats';
import { AccountService } from './accounts';
import { ApiKeyService } from './apiKeys';
import { ApiKeyAuthenticator } from './auth';
import { AuthThrottle, DEFAULT_THROTTLE, type ThrottlePolicy } from './authThrottle';
import { EventService } from './events';
import { LedgerService } from './ledger';
import { IdempotentWrites } from './idempotency';
import { UsageService } from './usage';
import { StreamService } from './streams';
import { StreamStore } from '../db/streamStore';
import { StreamDeliverer } from '../streams/deliverer';
import { SecretBox } from '../streams/secretBox';
import { InvitationRepository } from '../db/invitationRepository';
import { MemberRepository } from '../db/memberRepository';
import { keyDerivedFrom } from '../domain/ledger/note';
import { Mailer } from './mailer';
import { MemberService } from './members';
import { SelfAudit } from './selfAudit';
import { AuditOutbox } from '../db/auditOutbox';
import { RowMac } from '../domain/ledger/rowMac';
import { ViewerTokens } from './viewer';
import { RetentionService } from './retention';
import { RetentionStore } from '../db/retentionStore';
import { EventSource } from '../streams/eventSource';

export interface Services {
  db: Db;
  orgs: OrgRepository;
  apiKeys: ApiKeyRepository;
  auth: ApiKeyAuthenticator;
  /** Where events are written: here, or forwarded to the instance that writes their organization. */
  ingest: Ingest;
  /** Integrates each organization's events into its signed Merkle log (the write side, in rounds). */
  integrator: LedgerIntegrator;
  /** The installation log's witnesses (null: no policy, or this process signs nothing). */
  witnesses: Witnesses | null;
  /** The ledger's read side for the API: key, checkpoints, proofs. */
  ledgerReads: LedgerService;
  /** The background audit (started by main.ts when LEDGER_AUDIT_INTERVAL_MS is set). */
  ledgerAudit: AuditSchedule;
  events: EventService;
  /** Writes with an Idempotency-Key (used by `events`; here for its metrics). */
  idempotent: IdempotentWrites;
  accounts: AccountService;
  /** Members, roles and invitations. */
  members: MemberService;
  /** The service's own audit events in each organization's log. */
  selfAudit: SelfAudit;
  /** Viewer tokens for an organization's customers. */
  viewerTokens: ViewerTokens;
  /** Retention policies, legal holds, erasure and the prune job (started by main.ts). */
  retention: RetentionService;
  /** Invitation mail (null: SMTP_URL unset). */
  mailer: Mailer | null;
  keys: ApiKeyService;
  usage: UsageService;
  /** Log streams: managed through `streams`, delivered by `streamDelivery` (started by main.ts). */
  streams: StreamService;
  streamDelivery: StreamDeliverer;
  /** Rows met without a valid MAC (db/foreignRows.ts): named, counted, moved aside. */
  foreign: Stores['foreign'];
  /** Dashboard calls per session, at the rate API keys get (RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST). */
  sessionRate: TokenBuckets;
  clock: Clock;
  log: Logger;
  limits: Limits;
}

export async function createServices(
  db: Db,
  /** From loadConfig, the one source of every default; `ledger` where this process signs (without it, the ledger serves reads and never signs). */
  config: Pick<Config, 'planCaps' | 'limits' | 'ingestWriters' | 'ingestCommitDelayMs' | 'idempotencyTtlMs' | 'ledgerIntervalMs' | 'streams' | 'publicUrl' | 'mail' | 'viewer' | 'retention'> & { ledger?: LedgerOptions & { witnessPolicy?: Policy | null } },
  clock: Clock,
  log: Logger,
  options: { throttle?: ThrottlePolicy } = {},
): Promise<Services> {
  const c = collections(db);
  await ensureIndexes(c);
  const orgs = new OrgRepository(c, config.planCaps);
  // Rows the service writes carry a MAC under a key derived from the key file (db/rowMacs.ts).
  const rowMac = config.ledger?.signer ? RowMac.fromSigner(config.ledger.signer) : null;
  const stores = new Stores(c, log, rowMac);
  // Rows of versions before MACs are sealed where a signed checkpoint covers them, before anything runs.
  if (config.ledger?.signer) await sealLegacyRows(stores.ledger, config.ledger.signer, clock.now(), log);
  const apiKeys = stores.apiKeys;
  const auth = new ApiKeyAuthenticator(apiKeys, clock, log);
  const forgetKey = (hash: string) => { auth.forget(hash); };
  // Without options (the admin CLI), the ledger serves reads and never signs.
  const ledgerOptions = config.ledger ?? { name: 'unsigned', signer: null, intervalMs: config.ledgerIntervalMs };
  const ledgerStore = stores.ledger;
  const integrator = new LedgerIntegrator({ ...ledgerOptions, store: ledgerStore, clock, log });
  const ledgerReader = new LedgerReader(ledgerStore, { name: ledgerOptions.name, verifier: ledgerOptions.signer, intervalMs: ledgerOptions.intervalMs }, ledgerOptions.signer ? integrator : null, clock);
  const policy = config.ledger?.witnessPolicy;
  const witnessStore = stores.witnesses;
  const witnesses = policy && ledgerOptions.signer ? new Witnesses(policy, witnessStore, ledgerReader.installation(), ledgerOptions.signer, log) : null;
  integrator.witnessing = witnesses;
  if (witnesses) witnesses.onAlarm = (reason) => { integrator.haltInstallation(reason); };
  // Instances authenticate each other with a key derived from the signing key file they share.
  const instanceAuth = config.ledger?.signer ? InstanceAuth.fromSigner(config.ledger.signer) : InstanceAuth.alone();
  // FerretDB reads a whole organization for a range of sequence numbers; point reads reach its GIN index.
  const buildInfo = await db.command({ buildInfo: 1 });
  const streamStore = new StreamStore(c, typeof buildInfo.ferretdbVersion === 'string', stores.foreign);
  const streamEvents = new EventSource(streamStore);
  const writer = new EventWriter(stores.inserts, (tenant) => stores.events(tenant), orgs, new ActiveKeys(apiKeys), clock, log, forgetKey, (docs, hashes) => {
    integrator.stored(docs, hashes);
    streamEvents.add(docs);
  }, config.ingestCommitDelayMs, rowMac, async (tenant) => {
    const signer = config.ledger?.signer;
    return signer ? signedSizeOf(stores.ledger, signer, tenant) : 0;
  });
  const ingest = new Ingest(stores, writer, instanceAuth, log, forgetKey, config.ingestWriters);
  const limits = config.limits;
  const idempotent = new IdempotentWrites(stores, ingest, clock, log, config.idempotencyTtlMs);
  const events = new EventService(stores, ingest, idempotent, clock, integrator, limits);
  const box = SecretBox.fromSigner(config.ledger?.signer ?? null);
  const streamDelivery = new StreamDeliverer(streamStore, streamEvents, ledgerReader, ingest.instances, box, config.streams, clock, log.child({ component: 'streams' }));
  const throttle = new AuthThrottle(new AuthAttemptRepository(c), options.throttle ?? DEFAULT_THROTTLE);
  // The admin CLI seals its outbox records with the row key from the key file; without it nothing is drained.
  const selfAudit = new SelfAudit(ingest, new AuditOutbox(c), rowMac, clock, log);
  const memberRepo = new MemberRepository(c);
  const sessions = new SessionRepository(c);
  const accounts = new AccountService(new AccountRepository(c), memberRepo, sessions, orgs, throttle, selfAudit, clock, log);
  const mailer = config.mail ? new Mailer(config.mail.smtpUrl, config.mail.from) : null;
  const viewerSecret = config.ledger?.signer ? keyDerivedFrom(config.ledger.signer, 'audit-ledger/viewer-token/v1') : null;
  return {
    db,
    orgs,
    apiKeys,
    auth,
    ingest,
    integrator,
    ledgerReads: new LedgerService(ledgerReader, events, witnesses),
    witnesses,
    ledgerAudit: new AuditSchedule(orgs, ledgerStore, witnessStore, config.ledger?.signer ?? null, log),
    events,
    idempotent,
    accounts,
    members: new MemberService(memberRepo, new InvitationRepository(c), sessions, orgs, accounts, selfAudit, mailer, config.publicUrl, clock, log),
    selfAudit,
    retention: new RetentionService(
      new RetentionStore(c, rowMac, stores.foreign),
      () => orgs.ids(),
      stores.exportLeases,
      {
        signedSize: async (tenant) => (await ledgerReader.of(tenant).newest())?.size ?? 0,
        integrate: (tenant, seq) => integrator.integrate(tenant, { storedTo: seq }),
      },
      selfAudit,
      config.retention,
      clock,
      log.child({ component: 'retention' }),
    ),
    viewerTokens: new ViewerTokens(viewerSecret, apiKeys, { maxMinutes: config.viewer.maxMinutes, publicUrl: config.publicUrl }, clock),
    mailer,
    keys: new ApiKeyService(apiKeys, auth, selfAudit, clock),
    usage: new UsageService(events, orgs, clock),
    streams: new StreamService(streamStore, (tenant) => stores.events(tenant), box, streamDelivery, selfAudit, clock),
    streamDelivery,
    foreign: stores.foreign,
    // Sessions too get the installation's rate from all instances together (src/http/rateLimit.ts).
    sessionRate: new TokenBuckets(limits.ratePerSecond, limits.rateBurst, () => ingest.instances.share),
    clock,
    log,
    limits,
  };
}
