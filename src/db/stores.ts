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

  constructor(
    private readonly c: Collections,
    log: Logger,
  ) {
    this.claims = new IdempotencyRepository(c);
    this.inserts = new EventInserts(c, log);
    this.ledger = new LedgerStore(c);
    this.apiKeys = new ApiKeyRepository(c);
    this.exportLeases = new ExportLeaseStore(c);
    this.witnesses = new WitnessStore(c);
  }

  /** One organization's events, read. */
  events(tenant: string): EventReader {
    return new EventReader(this.c, tenant);
  }

  /** The instance list's collection (a handful of documents, one per running instance). */
  get instances(): Collections['instances'] {
    return this.c.instances;
  }
}
