/**
 * Retention's documents: each organization's policy changes (its log's entries), legal holds, the leaves
 * kept for removed events, the counts that list pages and exports report, and the removal itself.
 */
import type { Collections } from './database';
import { type PolicyChange, RETENTION_ACTIONS, ZPolicyChangedMeta } from '../domain/retention';
import { SELF_AUDIT_KEY_ID } from '../domain/selfAudit';
import type { EventDoc, KeptLeafDoc, RetentionHoldDoc, RetentionStateDoc } from './documents';
import { DUPLICATE_KEY, isDuplicateKey } from './errors';

/** Events read per batch when looking for what to remove, and leaves inserted per insert. */
const BATCH = 1_000;
/**
 * Events deleted per delete: FerretDB sends one PostgreSQL parameter per document, at most 65,535, and
 * reads the organization's events for each delete (no index), so fewer, larger runs: 100,000 events took
 * 572 s in runs of 1,000 (BENCHMARKS.md).
 */
const DELETE_RUN = 10_000;

export class RetentionStore {
  constructor(private readonly c: Collections) {}

  /**
   * The organization's policy changes, oldest first, read from its log: the entries are the policy (no
   * copy that a crash could leave behind them). A few per organization, found by (tenant, action).
   */
  async policyChanges(tenant: string): Promise<PolicyChange[]> {
    const entries = await this.c.events.find({ tenant, action: RETENTION_ACTIONS.policyChanged, api_key_id: SELF_AUDIT_KEY_ID }).sort({ ts: 1, _id: 1 }).toArray();
    const changes: (PolicyChange & { seq: number })[] = [];
    for (const doc of entries) {
      const meta = ZPolicyChangedMeta.safeParse(JSON.parse(doc.metadata));
      if (meta.success) changes.push({ seq: doc.seq, days: meta.data.days, effectiveAt: Date.parse(meta.data.effective_at), recordedAt: doc.ts.getTime() });
    }
    return changes.sort((a, b) => a.seq - b.seq);
  }

  holds(tenant: string): Promise<RetentionHoldDoc[]> {
    return this.c.retentionHolds.find({ org_id: tenant }).toArray();
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

  /** Adds removed events to the counts; `prune`: the cutoff and policy of a prune. */
  async counted(tenant: string, kind: 'pruned' | 'erased', count: number, prune?: { cutoff: Date; days: number }): Promise<void> {
    await this.c.retentionState.updateOne(
      { _id: tenant },
      {
        $inc: { [kind]: count, [kind === 'pruned' ? 'erased' : 'pruned']: 0 },
        ...(prune ? { $set: { pruned_before: prune.cutoff, policy_days: prune.days } } : {}),
      },
      { upsert: true },
    );
  }

  /**
   * The events received before `cutoff` with seq ≤ `upTo` (signed ones), oldest first, in batches: one
   * walk of the (tenant, received_at) index, whatever the organization's size.
   */
  async *receivedBefore(tenant: string, cutoff: Date, upTo: number): AsyncGenerator<EventDoc[]> {
    let batch: EventDoc[] = [];
    for await (const doc of this.c.events.find({ tenant, received_at: { $lt: cutoff }, seq: { $lte: upTo } }).sort({ received_at: 1 }).batchSize(BATCH)) {
      batch.push(doc);
      if (batch.length === BATCH) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length) yield batch;
  }

  /** An actor's events, or the events with these ids, in seq order. */
  async matching(tenant: string, which: { actor_id?: string; event_ids?: readonly string[] }): Promise<EventDoc[]> {
    const query = which.actor_id !== undefined ? { tenant, actor_id: which.actor_id } : { tenant, _id: { $in: [...(which.event_ids ?? [])] } };
    return (await this.c.events.find(query).toArray()).sort((a, b) => a.seq - b.seq);
  }

  /**
   * Removes events whose leaves are kept first: the leaves (an insert that skips those kept already),
   * then the events, bodies and salts. Returns how many events were deleted.
   */
  async remove(tenant: string, leaves: readonly KeptLeafDoc[], ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    try {
      for (let at = 0; at < leaves.length; at += BATCH) await this.c.keptLeaves.insertMany(leaves.slice(at, at + BATCH), { ordered: false });
    } catch (error) {
      // Kept before, by a run that stopped before deleting: the unique index keeps one.
      const writeErrors = (error as { writeErrors?: { code?: number }[] | { code?: number } }).writeErrors;
      const all = Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : [];
      if (!isDuplicateKey(error) && !(all.length > 0 && all.every((e) => e.code === DUPLICATE_KEY))) throw error;
    }
    let deleted = 0;
    for (let at = 0; at < ids.length; at += DELETE_RUN) {
      deleted += (await this.c.events.deleteMany({ tenant, _id: { $in: ids.slice(at, at + DELETE_RUN) } })).deletedCount;
    }
    return deleted;
  }
}
