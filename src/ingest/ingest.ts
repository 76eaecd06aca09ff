/**
 * Where an event gets its place in its organization's sequence: at the one instance that writes that
 * organization (src/ingest/instances.ts; by default one instance writes them all). An event received elsewhere is forwarded there, so instances
 * on one database do not race each other for sequence numbers; alone, an instance writes everything.
 *
 * The choice of writer is for speed only. Correctness stays with the writer's unique (tenant, seq)
 * index, so a moment in which two instances both write an organization (one joining, one stopping or
 * dead, or a forward that could not be delivered and is written here) costs a few lost races, never a
 * gap, a duplicate number or a cap overrun.
 */
import type { Logger } from 'pino';
import { AppError } from '../domain/errors';
import type { Stores } from '../db/stores';
import type { StoredEvent } from '../db/documents';
import { claimIdOf, type IdempotencyRepository } from '../db/idempotencyRepository';
import type { EventWriter, WriterStats } from './eventWriter';
import { unitTenant, type EventDraft, type KeyedWriteUnit } from './writeUnit';
import { Forwarder, UNDELIVERED } from './forwarder';
import { storedOf, type TPlacement } from './forwardWire';
import type { InstanceAuth } from './instanceAuth';
import { Instances } from './instances';

export interface IngestStats extends WriterStats {
  /** Events this instance sent to another instance to be written there. */
  forwarded: number;
  /** Instances this one takes for live, itself included. */
  liveInstances: number;
}

export class Ingest {
  readonly instances: Instances;
  private readonly forwarder: Forwarder;
  private readonly claims: IdempotencyRepository;

  constructor(
    stores: Stores,
    private readonly writer: EventWriter,
    /** The installation's key for instance-to-instance messages. */
    readonly auth: InstanceAuth,
    log: Logger,
    /** Told about keys found revoked, here or by the instance a write was forwarded to. */
    private readonly onInactiveKey: (hash: string) => void,
    /** How many of the live instances write events (INGEST_WRITERS). */
    writers = 1,
  ) {
    this.instances = new Instances(stores.instances, auth, log, writers);
    this.forwarder = new Forwarder(auth, log, (peer) => { this.instances.markDown(peer); });
    this.claims = stores.claims;
  }

  get stats(): IngestStats {
    return { ...this.writer.stats, forwarded: this.forwarder.forwarded, liveInstances: this.instances.liveCount };
  }

  /**
   * Stores a write unit, here or at its organization's writer (EventWriter.write); resolves once all are
   * durable. Not an async function: a unit written here gets the writer's own promise, not one more
   * wrapped around it.
   */
  write(unit: KeyedWriteUnit): Promise<StoredEvent[]> {
    if (unit.drafts.length === 0) return Promise.resolve([]);
    const owner = this.instances.ownerOf(unitTenant(unit));
    if (owner === this.instances.self) return this.writer.write(unit);
    return this.forwarded(owner, unit);
  }

  /** `write` at the instance that writes the unit's organization, or here when it cannot be reached. */
  private async forwarded(owner: Parameters<Forwarder['forward']>[0], unit: KeyedWriteUnit): Promise<StoredEvent[]> {
    let placed;
    try {
      placed = await this.forwarder.forward(owner, unit);
    } catch (error) {
      if (error instanceof AppError && error.code === 'INVALID_API_KEY') this.onInactiveKey(unit.keyHash);
      throw error;
    }
    if (placed === UNDELIVERED) return this.writer.write(unit);
    // The writer stores each draft as sent (one already stored under its id was stored from the same
    // request: see services/idempotency.ts, with its own salt, which the placement carries; or removed
    // since, which the placement says), so its placement completes it.
    return unit.drafts.map((draft, i) => storedOf(draft, placed[i] as TPlacement));
  }

  /**
   * The cap's refusal of a write of `tenant` that this instance can give without a database round (it
   * writes the organization, and found it at its cap a moment ago), or null.
   */
  refusedAtDoor(tenant: string): AppError | null {
    return this.instances.ownerOf(tenant) === this.instances.self ? this.writer.refusedAtDoor(tenant) : null;
  }

  /**
   * The service's own record of a change to an organization (services/selfAudit.ts): written by this
   * instance whoever writes the organization (the unique (tenant, seq) index keeps that exact, at the
   * cost of a lost race or two), with no key to check and no cap to count against.
   */
  async writeOwn(drafts: EventDraft[]): Promise<StoredEvent[]> {
    return drafts.length === 0 ? [] : this.writer.write({ drafts, keyHash: null, capExempt: true });
  }

  /**
   * A write another instance forwarded here: written here, whatever this instance's view of the owner.
   * A cap exemption is taken only where this instance can check it: the events complete the request of
   * an idempotency claim of their organization (services/idempotency.ts).
   */
  async writeForwarded(unit: KeyedWriteUnit): Promise<StoredEvent[]> {
    if (unit.capExempt && !(await this.claimed(unit.drafts))) throw new AppError('VALIDATION_FAILED', 'Invalid request: the cap exemption is not backed by an idempotency claim');
    return this.writer.write(unit);
  }

  /** Whether the drafts are events an idempotency claim of their organization names. */
  private async claimed(drafts: EventDraft[]): Promise<boolean> {
    const first = drafts[0];
    const key = first?.idempotency_key;
    if (!first || key === undefined || drafts.some((d) => d.tenant !== first.tenant || d.idempotency_key !== key)) return false;
    const claim = await this.claims.find(claimIdOf(first.tenant, key));
    const ids = new Set(claim?.tenant === first.tenant ? claim.event_ids : []);
    return drafts.every((d) => ids.has(d._id));
  }

  /** Resolves when everything received so far has been written, refused or answered by its writer. */
  async idle(): Promise<void> {
    await this.forwarder.idle();
    await this.writer.idle();
  }

  /** After leaving the instance list: lets everything in flight finish, and closes the forwarding connections. */
  async stop(): Promise<void> {
    await this.idle();
    this.forwarder.close();
  }
}
