/**
 * What the database layer hands to the layers above: stores bound to one organization, and the few
 * system-wide ones, each named for the job that needs it. Only the composition root
 * (src/services/container.ts) and the admin command line's opener build this from the collections;
 * nothing above `db/` sees the collections themselves (test/unit/architecture).
 */
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

export class Stores {
  /** Idempotency claims (their ids bind the organization: `claimIdOf`). */
  readonly claims: IdempotencyRepository;
  /** The writer's rounds: inserts across organizations and the newest-event search. */
  readonly inserts: EventInserts;
  /** The ledger's integrator rounds, audits and reseals (`forTenant` for one organization's). */
  readonly ledger: LedgerStore;
  readonly apiKeys: ApiKeyRepository;
  /** Export slots held across the installation. */
  readonly exportLeases: ExportLeaseStore;
  /** What the installation knows of its witnesses. */
  readonly witnesses: WitnessStore;
  /** Rows met without a valid MAC: named, counted, moved aside where they take a place. */
  readonly foreign: ForeignRows;

  constructor(
    private readonly c: Collections,
    log: Logger,
    /** The installation's row MACs (null: no key file here, nothing is signed). */
    readonly rowMac: RowMac | null = null,
  ) {
    this.foreign = new ForeignRows(c, log, rowMac);
    this.claims = new IdempotencyRepository(c);
    this.inserts = new EventInserts(c, log, rowMac, this.foreign);

    this.ledger = new LedgerStore(c, this.foreign);
    this.apiKeys = new ApiKeyRepository(c);
    this.exportLeases = new ExportLeaseStore(c);
    this.witnesses = new WitnessStore(c);
  }

  /** One organization's events, read. */
  events(tenant: string): EventReader {
    return new EventReader(this.c, tenant, this.foreign);
  }

  /** The instance list's collection (a handful of documents, one per running instance). */
  get instances(): Collections['instances'] {
    return this.c.instances;
  }
}
