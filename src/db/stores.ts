/**
 * What the database layer hands to the layers above: stores bound to one organization, and the few
 * system-wide ones, each named for the job that needs it. Only the composition root
 * (src/services/container.ts) and the admin command line's opener build this from the collections;
 * nothing above `db/` sees the collections themselves (test/unit/architecture).
 */
import { ProducerClaimStore } from './producerClaimStore';
import { ApiKeyRepository } from './apiKeyRepository';
import type { Collections } from './database';
import { EventInserts } from './eventInserts';
import { EventReader } from './eventReader';
import { IdempotencyRepository } from './idempotencyRepository';
import { LedgerStore } from './ledgerStore';
import type { Logger } from 'pino';
import { ExportLeaseStore } from './exportLeaseStore';
import { WitnessStore } from './witnessStore';
import { ForeignRows } from './foreignRows';
import type { RowMac } from '../domain/ledger/rowMac';
import type { Config } from '../config/env';
import { OrgRepository } from './orgRepository';
import { AccountRepository } from './accountRepository';
import { MemberRepository } from './memberRepository';
import { SessionRepository } from './sessionRepository';
import { InvitationRepository } from './invitationRepository';
import { AuthAttemptRepository } from './authAttemptRepository';
import { AuditOutbox } from './auditOutbox';
import { RetentionStore } from './retentionStore';
import { StreamStore } from './streamStore';
import { InstanceList } from './instanceList';

export interface StoreOptions {
  log: Logger;
  /** The installation's row MACs (null: no key file here, nothing is signed). */
  rowMac: RowMac | null;
  planCaps: Config['planCaps'];
  /** Whether stream reads go one event at a time (FerretDB: StreamStore's `pointReads`). */
  pointReads: boolean;
}

export class Stores {
  readonly rowMac: RowMac | null;
  readonly orgs: OrgRepository;
  /** Idempotency claims (their ids bind the organization: `claimIdOf`). */
  readonly claims: IdempotencyRepository;
  /** The writer's rounds: inserts across organizations and the newest-event search. */
  readonly inserts: EventInserts;
  /** The ledger's integrator rounds, audits and reseals (`forTenant` for one organization's). */
  readonly ledger: LedgerStore;
  readonly apiKeys: ApiKeyRepository;
  /** Whether each key's events are signed by a producer (services/producerKeys.ts). */
  readonly producerClaims: ProducerClaimStore;
  /** Export slots held across the installation. */
  readonly exportLeases: ExportLeaseStore;
  /** What the installation knows of its witnesses. */
  readonly witnesses: WitnessStore;
  /** Rows met without a valid MAC: named, counted, moved aside where they take a place. */
  readonly foreign: ForeignRows;
  readonly accounts: AccountRepository;
  readonly members: MemberRepository;
  readonly sessions: SessionRepository;
  readonly invitations: InvitationRepository;
  /** Failed sign-ins, for the throttle. */
  readonly authAttempts: AuthAttemptRepository;
  /** The admin CLI's self-audit records, for an instance to write. */
  readonly outbox: AuditOutbox;
  /** Retention policies, holds, tombstones and erasures. */
  readonly retention: RetentionStore;
  /** Log streams' configurations, progress and the events they read. */
  readonly streams: StreamStore;
  /** The running instances (one document each). */
  readonly instances: InstanceList;

  constructor(
    private readonly c: Collections,
    options: StoreOptions,
  ) {
    const { log, rowMac } = options;
    this.rowMac = rowMac;
    this.foreign = new ForeignRows(c, log, rowMac);
    this.orgs = new OrgRepository(c, options.planCaps);
    this.claims = new IdempotencyRepository(c);
    this.inserts = new EventInserts(c, log, rowMac, this.foreign);
    this.ledger = new LedgerStore(c, this.foreign);
    this.apiKeys = new ApiKeyRepository(c);
    this.producerClaims = new ProducerClaimStore(c);
    this.exportLeases = new ExportLeaseStore(c);
    this.witnesses = new WitnessStore(c);
    this.accounts = new AccountRepository(c);
    this.members = new MemberRepository(c);
    this.sessions = new SessionRepository(c);
    this.invitations = new InvitationRepository(c);
    this.authAttempts = new AuthAttemptRepository(c);
    this.outbox = new AuditOutbox(c);
    this.retention = new RetentionStore(c, rowMac, this.foreign);
    this.streams = new StreamStore(c, options.pointReads, this.foreign);
    this.instances = new InstanceList(c);
  }

  /** One organization's events, read. */
  events(tenant: string): EventReader {
    return new EventReader(this.c, tenant, this.foreign);
  }
}
