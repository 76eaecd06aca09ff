/**
 * Leaves kept apart (`kept_leaves`) by versions before tombstones become tombstones in the events
 * collection, once, at start-up: afterwards every removed event has its tombstone at its number and the
 * sequence is gapless again (the newest-event search, streams and exports rely on that).
 *
 * Those leaves did not keep the event's id, its month or the entry that removed it: the tombstone takes
 * an id of its own (`kept:<tenant>:<seq>`, never a UUID, so no request can name it), the entry is found
 * again from the log's retention entries (null where none covers the number: the audit names it), and
 * the month is left empty (it only matters for the organization's newest event, which a removal never
 * is: its entry comes after it). Idempotent and safe for instances starting together: a tombstone
 * inserted twice, or where the event is still stored (a removal that stopped between keeping the leaf
 * and deleting the body, which a later prune or erasure finishes), loses on the unique indexes.
 */
import type { Collection } from 'mongodb';
import { type EventDoc, type IdempotencyClaimDoc, type InstallationStateDoc, type LegacyKeptLeafDoc, type StoredEvent, toEvent, type TombstoneDoc } from './documents';
import { DUPLICATE_KEY, isDuplicateKey } from './errors';
import { RETENTION_ACTIONS } from '../domain/retention';
import { checkRetention, logEntryOf, type RetentionCheck } from '../client/retentionCheck';
import { SELF_AUDIT_KEY_ID } from '../domain/selfAudit';

const BATCH = 1_000;

/** The collections it reads and writes (database.ts's `Collections`, which calls it at start-up). */
interface Migrated {
  events: Collection<EventDoc>;
  eventSlots: Collection<StoredEvent>;
  legacyKeptLeaves: Collection<LegacyKeptLeafDoc>;
  idempotencyClaims: Collection<IdempotencyClaimDoc>;
  installationState: Collection<InstallationStateDoc>;
}

export async function migrateKeptLeaves(c: Migrated): Promise<number> {
  const checks = new Map<string, RetentionCheck>();
  let batch: (LegacyKeptLeafDoc & { _id: unknown })[] = [];
  let migrated = 0;
  const flush = async () => {
    const tombstones: TombstoneDoc[] = [];
    for (const leaf of batch) {
      let check = checks.get(leaf.tenant);
      if (!check) {
        check = await retentionOf(c, leaf.tenant);
        checks.set(leaf.tenant, check);
      }
      const authority = check.authority(leaf.seq);
      tombstones.push({ _id: `kept:${leaf.tenant}:${leaf.seq}`, tenant: leaf.tenant, seq: leaf.seq, month: '', month_seq: 0, removed: authority?.kind ?? 'erased', removed_by: authority?.by ?? null, leaf_v: leaf.v, leaf: leaf.hash });
    }
    await c.eventSlots.insertMany(tombstones, { ordered: false }).catch((error: unknown) => {
      const errors = [(error as { writeErrors?: { code?: number } | { code?: number }[] }).writeErrors ?? []].flat();
      if (!isDuplicateKey(error) && (errors.length === 0 || errors.some((e) => e.code !== DUPLICATE_KEY))) throw error;
    });
    await c.legacyKeptLeaves.deleteMany({ _id: { $in: batch.map((leaf) => leaf._id) } } as never);
    migrated += batch.length;
    batch = [];
  };
  for await (const leaf of c.legacyKeptLeaves.find({}).batchSize(BATCH)) {
    batch.push(leaf);
    if (batch.length === BATCH) await flush();
  }
  if (batch.length) await flush();
  for (const tenant of checks.keys()) await markLegacyClaims(c, tenant);
  // Tombstones of an earlier version's leaves have no MAC yet: the start-up's upgrade pass seals those a
  // signed checkpoint covers (ledger/legacyRows.ts), which it does only while the installation is not marked.
  if (migrated > 0) await c.installationState.deleteOne({ _id: 'row_macs' });
  return migrated;
}

/**
 * Those versions kept no event ids, so a claim some of whose events are missing cannot tell a removed
 * event from one never written: it is marked, and a replay of it is refused rather than store again what
 * may have been erased (services/idempotency.ts). Only claims still in force (IDEMPOTENCY_TTL_HOURS).
 */
async function markLegacyClaims(c: Migrated, tenant: string): Promise<void> {
  for (const claim of await c.idempotencyClaims.find({ expires_at: { $gt: new Date() }, tenant }).toArray()) {
    const stored = await c.eventSlots.countDocuments({ tenant, _id: { $in: claim.event_ids } });
    if (stored < claim.event_ids.length) await c.idempotencyClaims.updateOne({ _id: claim._id }, { $set: { legacy_removed: true } });
  }
}

/** What the organization's own retention entries authorize. */
async function retentionOf(c: Migrated, tenant: string): Promise<RetentionCheck> {
  const docs = await c.events.find({ tenant, action: { $in: Object.values(RETENTION_ACTIONS) }, api_key_id: SELF_AUDIT_KEY_ID }).toArray();
  docs.sort((a, b) => a.seq - b.seq);
  return checkRetention(docs.flatMap((doc) => logEntryOf(doc.seq, toEvent(doc)) ?? []));
}
