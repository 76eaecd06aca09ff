/**
 * The one reading of an organization's retention entries: which missing events a later prune or erasure
 * entry of the log covers, under the policy its own policy entries set. `cli verify` and `stream verify`
 * run it on what they were given, `ledger audit` on the stored events, the dashboard in the browser (no
 * crypto here, so all of them can). The entries' shapes and the policy rule are domain/retention.ts's.
 */
import type { TEvent } from '../domain/eventFields';
import { DAY_MS, holdsEverything, isRetentionAction, isShorter, policyAt, type PolicyChange, RETENTION_ACTIONS, ZErasedMeta, ZHoldPlacedMeta, ZHoldReleasedMeta, ZPolicyChangedMeta, ZPrunedMeta } from '../domain/retention';
import { SELF_AUDIT_KEY_ID } from '../domain/selfAudit';

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

/**
 * Whether a retention entry's actor (as the service wrote it: services/selfAudit.ts) had an owner's
 * authority: an owner, or an API key with the scope `retention:manage`, which only an owner can grant.
 */
function byOwnersAuthority(metadata: Readonly<Record<string, unknown>>): boolean {
  if (metadata.actor_type === 'member') return metadata.role === 'owner';
  return metadata.actor_type === 'api_key' && Array.isArray(metadata.scopes) && metadata.scopes.includes('retention:manage');
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

