/**
 * Retention that the ledger proves: the policy, its changes, every prune and every erasure are entries
 * of the organization's own log (self-audit records, `api_key_id` "audit_ledger"), and a missing event
 * is valid only where a later prune or erasure entry covers it under the policy in force then.
 *
 * `checkRetention` is the one reading of those entries: `cli verify` runs it on an export, `ledger
 * audit` on the stored events, the dashboard in the browser (no crypto here, so all three can).
 */
import { z } from 'zod';
import type { TEvent } from './eventFields';
import { SELF_AUDIT_KEY_ID } from './selfAudit';

export const DAY_MS = 86_400_000;

export const RETENTION_ACTIONS = {
  policyChanged: 'audit_ledger.retention.policy_changed',
  pruned: 'audit_ledger.retention.pruned',
  erased: 'audit_ledger.retention.erased',
  holdPlaced: 'audit_ledger.retention.hold_placed',
  holdReleased: 'audit_ledger.retention.hold_released',
} as const;
export type RetentionAction = (typeof RETENTION_ACTIONS)[keyof typeof RETENTION_ACTIONS];
const ACTIONS = new Set<string>(Object.values(RETENTION_ACTIONS));

export function isRetentionAction(action: string): action is RetentionAction {
  return ACTIONS.has(action);
}

/**
 * Whether a stored event is one of the service's own retention entries: authority belongs to who stored
 * it (the service's key id, which no client key can have), never to an action's name, which older
 * versions let clients send. A client's event is an ordinary event: erasable, prunable.
 */
export function isRetentionEntry(event: { action: string; api_key_id: string }): boolean {
  return event.api_key_id === SELF_AUDIT_KEY_ID && ACTIONS.has(event.action);
}

/** Why an erasure was made: a code, never the data or the requester's words. */
export const ERASURE_REASONS = ['data_subject_request', 'legal_obligation', 'consent_withdrawn', 'contract_ended', 'data_minimization'] as const;
export const ZErasureReason = z.enum(ERASURE_REASONS);
export type TErasureReason = z.infer<typeof ZErasureReason>;

/** What a legal hold keeps: events matching every given field; none given: the whole organization. */
export const ZHoldFilter = z.strictObject({
  actor_id: z.string().min(1).max(256).optional(),
  action: z.string().min(1).max(256).optional(),
  resource_type: z.string().min(1).max(256).optional(),
  resource_id: z.string().min(1).max(256).optional(),
  organization_id: z.string().min(1).max(256).optional(),
});
export type THoldFilter = z.infer<typeof ZHoldFilter>;

export function holdMatches(filter: THoldFilter, event: Readonly<Record<string, unknown>>): boolean {
  return Object.entries(filter).every(([field, value]) => event[field] === value);
}

/** A hold with no filter keeps every event of the organization: nothing is pruned or erased. */
export function holdsEverything(filter: THoldFilter): boolean {
  return Object.keys(filter).length === 0;
}

const ZIsoTime = z.iso.datetime({ offset: true });
/** Sequence numbers as text: `1-40,42,44-100`, ascending, no overlap. */
const ZRanges = z.string().regex(/^\d+(-\d+)?(,\d+(-\d+)?)*$/, 'sequence ranges like 1-40,42');

/** The metadata of each retention entry: what the service writes and what a verifier reads. */
export const ZPolicyChangedMeta = z.object({
  days: z.number().int().positive().nullable().meta({ description: 'Days an event is kept after it was received; null: for ever' }),
  previous_days: z.number().int().positive().nullable(),
  effective_at: ZIsoTime,
  notice_days: z.number().int().min(0),
});
export const ZPrunedMeta = z.object({
  ranges: ZRanges,
  count: z.number().int().positive(),
  cutoff: ZIsoTime,
  policy_days: z.number().int().positive(),
  held: z.number().int().min(0),
});
/** An erasure that met only held events (or was refused for a hold on everything) is recorded too: count 0, no ranges. */
export const ZErasedMeta = z.object({
  ranges: z.union([ZRanges, z.literal('')]),
  count: z.number().int().min(0),
  reason: ZErasureReason,
  held: z.number().int().min(0),
}).refine((meta) => (meta.count === 0) === (meta.ranges === ''), 'ranges are empty exactly when count is 0');
export const ZHoldPlacedMeta = z.object({ hold_id: z.string(), filter: ZHoldFilter, reason: z.string() });
export const ZHoldReleasedMeta = z.object({ hold_id: z.string() });

/**
 * Whether a retention entry's actor (as the service wrote it: services/selfAudit.ts) had an owner's
 * authority: an owner, or an API key with the scope `retention:manage`, which only an owner can grant.
 */
function byOwnersAuthority(metadata: Readonly<Record<string, unknown>>): boolean {
  if (metadata.actor_type === 'member') return metadata.role === 'owner';
  return metadata.actor_type === 'api_key' && Array.isArray(metadata.scopes) && metadata.scopes.includes('retention:manage');
}

/** Ascending sequence numbers as ranges text: `1-40,42` (entries), or `1-40, 42` with `separator` `', '` (messages). */
export function formatRanges(seqs: readonly number[], separator = ','): string {
  const out: string[] = [];
  for (let i = 0; i < seqs.length; ) {
    let j = i;
    while (j + 1 < seqs.length && (seqs[j + 1] as number) === (seqs[j] as number) + 1) j++;
    out.push(i === j ? String(seqs[i]) : `${seqs[i]}-${seqs[j]}`);
    i = j + 1;
  }
  return out.join(separator);
}

/** Ranges text as [from, to] pairs; null when not ascending and disjoint. */
export function parseRanges(text: string): [number, number][] | null {
  const out: [number, number][] = [];
  for (const part of text.split(',')) {
    const [from, to = from] = part.split('-').map(Number) as [number, number?];
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 1 || to < from || (out.length > 0 && from <= (out.at(-1) as [number, number])[1])) return null;
    out.push([from, to]);
  }
  return out;
}

/**
 * An entry of the log as a verifier reads it: its sequence number and the event's fields retention needs
 * (`timestamp`: when the service recorded it, by its own clock).
 */
export type LogEntry = Pick<TEvent, 'action' | 'api_key_id' | 'timestamp' | 'metadata'> & { seq: number };

/** The event at `seq` as a retention entry, or null when it is not one (wherever the events come from). */
export function logEntryOf(seq: number, event: TEvent): LogEntry | null {
  return isRetentionAction(event.action) ? { seq, action: event.action, api_key_id: event.api_key_id, timestamp: event.timestamp, metadata: event.metadata } : null;
}

export interface RetentionCheck {
  /** What is wrong with the retention entries, each naming its sequence number. */
  problems: string[];
  /** Why the event at `seq` may be missing (the covering entry), or null: missing without authority. */
  authority(seq: number): { kind: 'pruned' | 'erased'; by: number } | null;
  /** The ranges valid entries removed, each with its entry: an event still present in one was not removed. */
  covered: readonly { from: number; to: number; by: number; kind: 'pruned' | 'erased' }[];
  /** Whether the valid entry at `by` covers `seq` as a removal of this kind (what a tombstone claims). */
  removedBy(seq: number, by: number, kind: 'pruned' | 'erased'): boolean;
  /** Valid prune and erasure entries, and the events they cover. */
  pruned: number;
  erased: number;
}

/** A policy change: days (null: for ever), when it takes effect and when it was recorded (ms). */
export interface PolicyChange {
  days: number | null;
  effectiveAt: number;
  recordedAt: number;
}

/**
 * The change in force at `time` (null: none, events are kept for ever). A change is in force from its
 * effective time until a later one is, unless a later change was recorded before it took effect: then
 * it never takes effect (an owner who changes their mind during the notice period cancels it).
 */
export function policyAt<T extends PolicyChange>(changes: readonly T[], time: number): T | null {
  let found: T | null = null;
  for (const [i, change] of changes.entries()) {
    const superseded = changes.slice(i + 1).some((later) => later.recordedAt < change.effectiveAt);
    if (!superseded && change.effectiveAt <= time) found = change;
  }
  return found;
}

/** Whether `days` is shorter than the policy `inForce` (null: for ever): only then is notice due. */
export function isShorter(days: number | null, inForce: number | null): boolean {
  return days !== null && (inForce === null || days < inForce);
}

interface Policy extends PolicyChange {
  seq: number;
}

/**
 * Reads an organization's retention entries (any events may be given: the others are skipped) in
 * sequence order and checks each against the log's own policy entries:
 * - a policy change that shortens the policy (or sets one where there was none) takes effect no sooner
 *   than its notice period after it was recorded; a longer one may take effect at once;
 * - a prune entry names the policy in force when it was recorded (a change is in force from its
 *   effective time, unless a later change was recorded before then), and a cutoff no later than that
 *   many days before it; no whole-organization hold was in place;
 * - an erasure entry was made by an owner, or with an API key holding `retention:manage` (which only an
 *   owner can grant), with a reason code, with no whole-organization hold in place;
 * - both cover only events before themselves.
 * Entries whose `api_key_id` is not the service's were sent by a client: they are no authority.
 */
export function checkRetention(entries: Iterable<LogEntry>): RetentionCheck {
  const problems: string[] = [];
  const policies: Policy[] = [];
  const holds = new Map<string, boolean>();
  const covers: { from: number; to: number; by: number; kind: 'pruned' | 'erased' }[] = [];
  let pruned = 0;
  let erased = 0;
  const orgHeld = () => [...holds.values()].some(Boolean);

  for (const entry of entries) {
    if (!isRetentionAction(entry.action)) continue;
    const where = `retention entry at sequence number ${entry.seq} (${entry.action})`;
    if (entry.api_key_id !== SELF_AUDIT_KEY_ID) continue;
    const time = Date.parse(entry.timestamp);
    const coverage = (ranges: string, count: number, kind: 'pruned' | 'erased'): boolean => {
      const parsed = parseRanges(ranges);
      if (!parsed) return void problems.push(`${where}: its ranges are not ascending and disjoint`), false;
      const total = parsed.reduce((n, [from, to]) => n + to - from + 1, 0);
      if (total !== count) return void problems.push(`${where}: its ranges hold ${total} events, not the ${count} it claims`), false;
      if ((parsed.at(-1) as [number, number])[1] >= entry.seq) return void problems.push(`${where}: it claims events recorded after itself`), false;
      for (const [from, to] of parsed) covers.push({ from, to, by: entry.seq, kind });
      return true;
    };
    switch (entry.action) {
      case RETENTION_ACTIONS.policyChanged: {
        const meta = ZPolicyChangedMeta.safeParse(entry.metadata);
        if (!meta.success) {
          problems.push(`${where}: malformed`);
          break;
        }
        const { days, effective_at: effective, notice_days: notice } = meta.data;
        const effectiveAt = Date.parse(effective);
        if (isShorter(days, policyAt(policies, time)?.days ?? null) && effectiveAt < time + notice * DAY_MS) problems.push(`${where}: shortens the policy to ${days} days effective ${effective}, inside its ${notice}-day notice period`);
        if (effectiveAt < time) problems.push(`${where}: takes effect before it was recorded`);
        policies.push({ seq: entry.seq, days, effectiveAt, recordedAt: time });
        break;
      }
      case RETENTION_ACTIONS.pruned: {
        const meta = ZPrunedMeta.safeParse(entry.metadata);
        if (!meta.success) {
          problems.push(`${where}: malformed`);
          break;
        }
        const { cutoff, policy_days: days } = meta.data;
        const policy = policyAt(policies, time);
        if (!policy || policy.days === null) {
          problems.push(`${where}: prunes with no retention policy in force (events are kept for ever)`);
          break;
        }
        if (days !== policy.days) {
          problems.push(`${where}: claims a ${days}-day policy, but the policy in force was ${policy.days} days (set at sequence number ${policy.seq})`);
          break;
        }
        if (Date.parse(cutoff) > time - days * DAY_MS) {
          problems.push(`${where}: its cutoff ${cutoff} is later than the ${days}-day policy allows (${new Date(time - days * DAY_MS).toISOString()})`);
          break;
        }
        if (orgHeld()) {
          problems.push(`${where}: prunes while the whole organization is on legal hold`);
          break;
        }
        if (coverage(meta.data.ranges, meta.data.count, 'pruned')) pruned += meta.data.count;
        break;
      }
      case RETENTION_ACTIONS.erased: {
        const meta = ZErasedMeta.safeParse(entry.metadata);
        if (!meta.success) {
          problems.push(`${where}: malformed`);
          break;
        }
        if (!byOwnersAuthority(entry.metadata)) {
          problems.push(`${where}: not made by an owner, nor with an API key holding retention:manage`);
          break;
        }
        // An entry that erased nothing records a request that a hold kept from erasing anything.
        if (meta.data.count === 0) break;
        if (orgHeld()) {
          problems.push(`${where}: erases while the whole organization is on legal hold`);
          break;
        }
        if (coverage(meta.data.ranges, meta.data.count, 'erased')) erased += meta.data.count;
        break;
      }
      case RETENTION_ACTIONS.holdPlaced: {
        const meta = ZHoldPlacedMeta.safeParse(entry.metadata);
        if (meta.success) holds.set(meta.data.hold_id, holdsEverything(meta.data.filter));
        else problems.push(`${where}: malformed`);
        break;
      }
      case RETENTION_ACTIONS.holdReleased: {
        const meta = ZHoldReleasedMeta.safeParse(entry.metadata);
        if (meta.success) holds.delete(meta.data.hold_id);
        else problems.push(`${where}: malformed`);
        break;
      }
    }
  }
  // Disjoint and sorted, for a binary search: an event covered twice (a prune run again after a crash) once.
  covers.sort((a, b) => a.from - b.from);
  const merged: typeof covers = [];
  for (const range of covers) {
    const last = merged.at(-1);
    if (last && range.from <= last.to) last.to = Math.max(last.to, range.to);
    else merged.push({ ...range });
  }
  // Each entry's own ranges, ascending (parseRanges): which entry a tombstone names is checked against them.
  const byEntry = new Map<number, typeof covers>();
  for (const range of covers) {
    const ranges = byEntry.get(range.by);
    if (ranges) ranges.push(range);
    else byEntry.set(range.by, [range]);
  }
  for (const ranges of byEntry.values()) ranges.sort((a, b) => a.from - b.from);
  return {
    problems,
    pruned,
    erased,
    covered: covers,
    removedBy: (seq, by, kind) => rangeAt(byEntry.get(by) ?? [], seq)?.kind === kind,
    authority(seq) {
      const range = rangeAt(merged, seq);
      return range ? { kind: range.kind, by: range.by } : null;
    },
  };
}

/** The range of `ranges` (sorted, disjoint) that holds `seq`: a binary search. */
function rangeAt<T extends { from: number; to: number }>(ranges: readonly T[], seq: number): T | null {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const range = ranges[mid] as T;
    if (range.to < seq) lo = mid + 1;
    else if (range.from > seq) hi = mid - 1;
    else return range;
  }
  return null;
}

/** The API's shapes: the retention page and its procedures. */
export const ZRetentionHold = z.object({
  id: z.string(),
  filter: ZHoldFilter,
  reason: z.string(),
  placed_at: z.string(),
  placed_by: z.string(),
}).meta({ id: 'RetentionHold' });
export type TRetentionHold = z.infer<typeof ZRetentionHold>;

export const ZRetentionView = z.object({
  days: z.number().int().nullable().meta({ description: 'The policy in force: days an event is kept after it was received (null: for ever)' }),
  pending: z.object({ days: z.number().int().nullable(), effective_at: z.string() }).nullable().meta({ description: 'A change recorded and not yet in force (a shorter policy waits for its notice period)' }),
  min_days: z.number().int(),
  max_days: z.number().int().nullable(),
  notice_days: z.number().int(),
  holds: z.array(ZRetentionHold),
  pruned: z.number().int().meta({ description: 'Events pruned under the policy so far' }),
  erased: z.number().int().meta({ description: 'Events erased on request so far' }),
  pruned_before: z.string().nullable().meta({ description: 'The newest prune\'s cutoff: events received before it may have been pruned' }),
}).meta({ id: 'RetentionView' });
export type TRetentionView = z.infer<typeof ZRetentionView>;

export const ZSetPolicyInput = z.strictObject({ days: z.number().int().positive().nullable() });
export const ZPlaceHoldInput = z.strictObject({ filter: ZHoldFilter, reason: z.string().trim().min(1).max(500) });
export const ZHoldIdInput = z.strictObject({ id: z.string().min(1).max(64) });
export const ZEraseInput = z
  .strictObject({
    actor_id: z.string().min(1).max(256).optional().meta({ description: 'Erase every event of this actor (give this or event_ids)' }),
    event_ids: z.array(z.string().min(1).max(64)).min(1).max(10_000).optional().meta({ description: 'Erase these events (give this or actor_id)' }),
    reason: ZErasureReason,
  })
  .refine((input) => (input.actor_id === undefined) !== (input.event_ids === undefined), { message: 'must be given, or event_ids instead (not both)', path: ['actor_id'] });
/** /v1/retention/holds: the organization's legal holds (the view's `holds`). */
export const ZHoldList = z.object({ data: z.array(ZRetentionHold) });
/** /v1/retention/holds/{id} released: gone, its release an entry of the log. */
export const ZReleasedHold = z.object({ id: z.string(), released: z.literal(true) });
export const ZEraseResult = z.object({
  erased: z.number().int(),
  held: z.number().int().meta({ description: 'Matching events kept because a legal hold covers them' }),
  entries: z.array(z.number().int()).meta({ description: 'The sequence numbers of the erasure entries recorded in the log' }),
});

/** What a list page or an export says of removed events (null fields: nothing removed). */
export const ZRemovedNotice = z.object({
  pruned: z.number().int(),
  erased: z.number().int(),
  pruned_before: z.string().nullable(),
  policy_days: z.number().int().nullable(),
}).meta({ id: 'RemovedEvents', description: 'Events removed from this organization\'s log: pruned under its retention policy (received before pruned_before) or erased on request; each removal is an entry of the log (docs/retention.md)' });
export type TRemovedNotice = z.infer<typeof ZRemovedNotice>;

/** The export's header naming removed events (as the list page's `removed`). */
export const REMOVED_EVENTS_HEADER = 'Audit-Ledger-Removed-Events';

/** `pruned=120; erased=3; pruned_before=2026-01-01T00:00:00.000Z; policy_days=90`. */
export function removedHeader(notice: TRemovedNotice): string {
  const parts = [`pruned=${notice.pruned}`, `erased=${notice.erased}`];
  if (notice.pruned_before) parts.push(`pruned_before=${notice.pruned_before}`);
  if (notice.policy_days !== null) parts.push(`policy_days=${notice.policy_days}`);
  return parts.join('; ');
}
