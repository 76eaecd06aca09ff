/**
 * Retention's documents: each organization's policy changes (its log's entries), legal holds, the leaves
 * kept for removed events, the counts that list pages and exports report, and the removal itself.
 */
import { randomUUID } from 'node:crypto';
import type { Collections } from './database';
import { type PolicyChange, RETENTION_ACTIONS, ZHoldPlacedMeta, ZHoldReleasedMeta, ZPolicyChangedMeta } from '../domain/retention';
import { SELF_AUDIT_KEY_ID } from '../domain/selfAudit';
import { type EventDoc, LIVE, type RetentionHoldDoc, type RetentionStateDoc, type StoredEvent, type TombstoneDoc } from './documents';
import type { ForeignRows } from './foreignRows';
import type { RowMac } from '../domain/ledger/rowMac';
import { sealTombstone } from './rowMacs';

/** Events read per batch when looking for what to remove. */
const BATCH = 1_000;
/**
 * Replacements per update command: FerretDB 1.24 holds one PostgreSQL connection per statement until the
 * command ends and hangs at 50 (../shared/STACK-NOTES.md).
 */
const REPLACES_PER_COMMAND = 16;

/** A hold as a prune or an erasure sees it: its id and what it keeps. */
export type HoldInForce = Pick<RetentionHoldDoc, '_id' | 'filter'>;

export class RetentionStore {
  constructor(
    private readonly c: Collections,
    /** Seals the tombstones it writes; null where nothing is signed. */
    private readonly rowMac: RowMac | null = null,
    /**
     * Only the service's own rows (db/rowMacs.ts) are authority (policy entries) or removed (a foreign row
     * is never turned into a tombstone the service would seal).
     */
    private readonly foreign: ForeignRows | null = null,
  ) {}

  private own(doc: StoredEvent): boolean {
    return this.foreign?.own(doc, 'retention') ?? true;
  }

  /**
   * The organization's policy changes, oldest first, read from its log: the entries are the policy (no
   * copy that a crash could leave behind them). A few per organization, found by (tenant, action).
   */
  async policyChanges(tenant: string): Promise<PolicyChange[]> {
    const entries = await this.c.events.find({ tenant, action: RETENTION_ACTIONS.policyChanged, api_key_id: SELF_AUDIT_KEY_ID }).sort({ ts: 1, _id: 1 }).toArray();
    const changes: (PolicyChange & { seq: number })[] = [];
    for (const doc of entries) {
      if (!this.own(doc)) continue;
      const meta = ZPolicyChangedMeta.safeParse(JSON.parse(doc.metadata));
      if (meta.success) changes.push({ seq: doc.seq, days: meta.data.days, effectiveAt: Date.parse(meta.data.effective_at), recordedAt: doc.ts.getTime() });
    }
    return changes.sort((a, b) => a.seq - b.seq);
  }

  /** The holds as placed and released (the collection: what the dashboard lists and releases by id). */
  holds(tenant: string): Promise<RetentionHoldDoc[]> {
    return this.c.retentionHolds.find({ org_id: tenant }).toArray();
  }

  /**
   * The holds a prune or an erasure must respect: those of the collection, and those the log's own entries
   * say are in force (placed and not released), so that a hold deleted from the collection behind the
   * service's back still holds. (One added there only keeps more: the safe side.)
   */
  async holdsInForce(tenant: string): Promise<HoldInForce[]> {
    const [stored, entries] = await Promise.all([
      this.holds(tenant),
      this.c.events.find({ tenant, action: { $in: [RETENTION_ACTIONS.holdPlaced, RETENTION_ACTIONS.holdReleased] }, api_key_id: SELF_AUDIT_KEY_ID }).toArray(),
    ]);
    const logged = new Map<string, HoldInForce>();
    for (const doc of entries.filter((entry) => this.own(entry)).sort((a, b) => a.seq - b.seq)) {
      const metadata: unknown = JSON.parse(doc.metadata);
      const placed = ZHoldPlacedMeta.safeParse(metadata);
      if (doc.action === RETENTION_ACTIONS.holdPlaced && placed.success) logged.set(placed.data.hold_id, { _id: placed.data.hold_id, filter: placed.data.filter });
      const released = ZHoldReleasedMeta.safeParse(metadata);
      if (doc.action === RETENTION_ACTIONS.holdReleased && released.success) logged.delete(released.data.hold_id);
    }
    for (const hold of stored) logged.set(hold._id, hold);
    return [...logged.values()];
  }

  async addHold(doc: RetentionHoldDoc): Promise<void> {
    await this.c.retentionHolds.insertOne(doc);
  }

  /** The hold, once removed (null: no such hold of this organization). */
  async removeHold(tenant: string, id: string): Promise<RetentionHoldDoc | null> {
    const doc = await this.c.retentionHolds.findOne({ _id: id, org_id: tenant });
    if (!doc) return null;
    const { deletedCount } = await this.c.retentionHolds.deleteOne({ _id: id, org_id: tenant });
    return deletedCount === 1 ? doc : null;
  }

  state(tenant: string): Promise<RetentionStateDoc | null> {
    return this.c.retentionState.findOne({ _id: tenant });
  }

  /**
   * Adds removed events to the counts (`prune`: the cutoff and policy of a prune), and changes the
   * organization's removal mark: every instance's streams check it before sending events they hold in
   * memory (StreamStore.removalMark), so it is written after the tombstones and before the removal is
   * answered. Set, never incremented: any new value is a change.
   */
  async counted(tenant: string, kind: 'pruned' | 'erased', count: number, prune?: { cutoff: Date; days: number }): Promise<void> {
    await this.c.retentionState.updateOne(
      { _id: tenant },
      {
        $inc: { [kind]: count, [kind === 'pruned' ? 'erased' : 'pruned']: 0 },
        $set: { removal_mark: randomUUID(), ...(prune ? { pruned_before: prune.cutoff, policy_days: prune.days } : {}) },
      },
      { upsert: true, writeConcern: { w: 'majority', j: true } },
    );
  }

  /**
   * The events received before `cutoff` with seq ≤ `upTo` (signed ones), oldest first, in batches: one
   * walk of the (tenant, received_at) index, whatever the organization's size.
   */
  async *receivedBefore(tenant: string, cutoff: Date, upTo: number): AsyncGenerator<EventDoc[]> {
    let batch: EventDoc[] = [];
    for await (const doc of this.c.events.find({ tenant, received_at: { $lt: cutoff }, seq: { $lte: upTo } }).sort({ received_at: 1 }).batchSize(BATCH)) {
      if (!this.own(doc)) continue;
      batch.push(doc);
      if (batch.length === BATCH) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length) yield batch;
  }

  /** An actor's events, or the events with these ids, in seq order (never a tombstone: those are removed already). */
  async matching(tenant: string, which: { actor_id?: string; event_ids?: readonly string[] }): Promise<EventDoc[]> {
    const query = which.actor_id !== undefined ? { tenant, actor_id: which.actor_id } : { tenant, _id: { $in: [...(which.event_ids ?? [])] }, ...LIVE };
    return (await this.c.events.find(query).toArray()).filter((doc) => this.own(doc)).sort((a, b) => a.seq - b.seq);
  }

  /**
   * Replaces events by their tombstones, each in one write (so a number never holds neither, whatever
   * stops the run: the sequence stays gapless). An event replaced before (a run that stopped midway and
   * was repeated) is left as it is. Returns how many were replaced now.
   */
  async remove(tenant: string, tombstones: readonly TombstoneDoc[]): Promise<number> {
    let removed = 0;
    for (let at = 0; at < tombstones.length; at += REPLACES_PER_COMMAND) {
      const replaces = tombstones.slice(at, at + REPLACES_PER_COMMAND).map((doc) => ({ replaceOne: { filter: { _id: doc._id, tenant, ...LIVE }, replacement: this.rowMac ? sealTombstone(this.rowMac, doc) : doc } }));
      removed += (await this.c.eventSlots.bulkWrite(replaces, { ordered: false, writeConcern: { w: 'majority', j: true } })).modifiedCount;
    }
    return removed;
  }
}
