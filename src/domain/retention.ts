/**
 * Retention that the ledger proves: the policy, its changes, every prune and every erasure are entries
 * of the organization's own log (self-audit records, `api_key_id` "audit_ledger"), and a missing event
 * is valid only where a later prune or erasure entry covers it under the policy in force then.
 *
 * Here: the entries' actions and metadata, the policy rule both sides apply, and the API's shapes. The
 * reading of the entries a verifier makes, `checkRetention`, is the client's (src/client/retentionCheck.ts).
 */
import { z } from 'zod';
import { PRODUCER_BOUND_ACTION, SELF_AUDIT_KEY_ID } from './selfAudit';

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

/**
 * Whether no prune or erasure removes an event: the retention entries, and the producer-key bindings,
 * which verifiers read to know whose events must be signed (domain/producerSignature.ts).
 */
export function isKeptEntry(event: { action: string; api_key_id: string }): boolean {
  return isRetentionEntry(event) || (event.api_key_id === SELF_AUDIT_KEY_ID && event.action === PRODUCER_BOUND_ACTION);
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
