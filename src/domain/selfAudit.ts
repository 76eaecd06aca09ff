/**
 * The service's own record of changes to an organization: audit events in that organization's own log
 * (signed and verifiable like the rest, counted against no cap), with the acting member, key or operator
 * as actor. The table is the documented list (docs/access.md, "The service audits itself").
 */
export const SELF_AUDIT_ACTIONS = {
  'audit_ledger.member.invited': 'An invitation was created (resource: the invitation; metadata: email, role)',
  'audit_ledger.invitation.revoked': 'A pending invitation was revoked',
  'audit_ledger.member.joined': 'An invitation was accepted (actor: the new member)',
  'audit_ledger.member.role_changed': 'A member\'s role changed (metadata: from, to)',
  'audit_ledger.member.removed': 'A member was removed; their sessions in the organization ended',
  'audit_ledger.member.left': 'A member left the organization',
  'audit_ledger.key.created': 'An API key was created (metadata: scopes)',
  'audit_ledger.key.revoked': 'An API key was revoked',
  'audit_ledger.key.producer_bound': 'An API key was bound to a producer\'s Ed25519 key before its first event (metadata: producer_key); recorded under the service\'s key id and never pruned or erased: verifiers read the bindings from it',
  'audit_ledger.stream.created': 'A log stream was created (metadata: destination type, format)',
  'audit_ledger.stream.paused': 'A log stream was paused',
  'audit_ledger.stream.resumed': 'A log stream was resumed',
  'audit_ledger.stream.deleted': 'A log stream was deleted',
  'audit_ledger.organization.created': 'The organization was created with the admin CLI (metadata: plan, monthly_cap)',
  'audit_ledger.export.run': 'An export was run (metadata: format, filters, tree size; by API key, member or viewer token)',
  'audit_ledger.signin.failed': 'A sign-in with a member\'s email failed (metadata: client address)',
  'audit_ledger.retention.policy_changed': 'An owner, or a key with retention:manage, changed the retention policy (metadata: days, previous_days, effective_at, notice_days)',
  'audit_ledger.retention.pruned': 'The prune job removed events older than the policy allows (metadata: ranges, count, cutoff, policy_days, held)',
  'audit_ledger.retention.erased': 'An owner, or a key with retention:manage, erased events on request (metadata: ranges, count, reason code, held)',
  'audit_ledger.retention.hold_placed': 'An owner, or a key with retention:manage, placed a legal hold (metadata: hold_id, filter, reason)',
  'audit_ledger.retention.hold_released': 'An owner, or a key with retention:manage, released a legal hold (metadata: hold_id)',
} as const;

export type SelfAuditAction = keyof typeof SELF_AUDIT_ACTIONS;

/** The service's record that a key was bound to a producer key (domain/producerSignature.ts). */
export const PRODUCER_BOUND_ACTION = 'audit_ledger.key.producer_bound' satisfies SelfAuditAction;
/**
 * The service's own records (self-audit, retention entries) have actions in this namespace; clients may
 * not send them, so that no client event can be taken for one by a person reading the log. (Authority is
 * decided by who stored an event, never by its action: domain/retention.ts, `isRetentionEntry`.)
 */
export const RESERVED_ACTION_PREFIX = 'audit_ledger.';

export function isReservedAction(action: string): boolean {
  return action.trim().toLowerCase().startsWith(RESERVED_ACTION_PREFIX);
}


/** The `api_key_id` of the events the service records itself (no key sent them). */
export const SELF_AUDIT_KEY_ID = 'audit_ledger';

/** Who made a change, as the event's actor shows it (`metadata.actor_type` says which kind). */
export type AuditActor =
  | { type: 'member'; accountId: string; email: string; role: string }
  /** A key, with the scopes it held when it acted (written beside `actor_type`, as a member's `role` is). */
  | { type: 'api_key'; keyId: string; scopes?: readonly string[] }
  | { type: 'operator' }
  | { type: 'viewer_token'; eventOrganizationId: string }
  /** The service's own scheduled work (the prune job). */
  | { type: 'service'; job: string }
  /** Someone not signed in: a failed sign-in's email. */
  | { type: 'anonymous'; email: string };

/** What a change was made to. */
export interface AuditResource {
  type: string;
  id: string;
  name?: string | null;
}
