/**
 * Members and what each role may do. One table (`ROLE_PERMISSIONS`) decides every dashboard procedure:
 * each names its permission in its meta, `sessionProcedure` checks it against the member's role as the
 * database holds it at that request, and the role matrix test and docs/access.md's table are read from here.
 */
import { z } from 'zod';
import type { Scope } from './apiKey';
import { ZEmail } from './email';

/** Strongest first: the order the dashboard lists them in. */
export const ROLES = ['owner', 'admin', 'auditor', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
export const ZRole = z.enum(ROLES);

/**
 * What a signed-in member may do. `signedIn` is for what concerns only the person (sign out, switch
 * organization, leave one): every role has it.
 */
export const ROLE_PERMISSIONS = {
  signedIn: ['owner', 'admin', 'auditor', 'viewer'],
  /** Events: list, get, export; the usage page. */
  'events:read': ['owner', 'admin', 'auditor', 'viewer'],
  /** The ledger's summary (checkpoints, witnesses, audit verdict). */
  'ledger:read': ['owner', 'admin', 'auditor', 'viewer'],
  /** The ledger's verification data: inclusion and consistency proofs. */
  'ledger:verify': ['owner', 'admin', 'auditor'],
  /** The member list and pending invitations. */
  'members:read': ['owner', 'admin', 'auditor', 'viewer'],
  /** Invite, change roles, remove: owners for anyone; admins for admins, auditors and viewers (`canManage`). */
  'members:manage': ['owner', 'admin'],
  /** API keys: list and create. */
  'keys:manage': ['owner', 'admin'],
  /** Revoking (deleting) a key: owners only, as the issue has it. */
  'keys:revoke': ['owner'],
  /** Log streams: create, pause, resume, test, delete, and see their destinations. */
  'streams:manage': ['owner', 'admin'],
  /** The retention policy, legal holds and erasure: owners only (each can remove events for good). */
  'retention:manage': ['owner'],
} as const satisfies Record<string, readonly Role[]>;

export type Permission = keyof typeof ROLE_PERMISSIONS;

export function can(role: Role, permission: Permission): boolean {
  return (ROLE_PERMISSIONS[permission] as readonly Role[]).includes(role);
}

/**
 * Scopes a member may give an API key only when their role has the same power: `retention:manage`
 * removes events for good, so it is for those who may manage retention themselves (owners).
 */
const SCOPE_PERMISSIONS: Partial<Record<Scope, Permission>> = { 'retention:manage': 'retention:manage' };

/** Whether a member with `role` may create a key with `scope`. */
export function canGrant(role: Role, scope: Scope): boolean {
  const needed = SCOPE_PERMISSIONS[scope];
  return needed === undefined || can(role, needed);
}

/** Whether `actor` may give, change or take away the role `target` (owners are managed by owners only). */
export function canManage(actor: Role, target: Role): boolean {
  if (!can(actor, 'members:manage')) return false;
  return actor === 'owner' || target !== 'owner';
}

export const INVITATION_TTL_MS = 7 * 24 * 3_600_000;

export const ZMember = z.object({
  account_id: z.string(),
  email: z.string(),
  role: ZRole,
  joined_at: z.string(),
});
export type TMember = z.infer<typeof ZMember>;

export const ZInvitation = z.object({
  id: z.string(),
  email: z.string(),
  role: ZRole,
  invited_by: z.string(),
  created_at: z.string(),
  expires_at: z.string(),
});
export type TInvitation = z.infer<typeof ZInvitation>;

export const ZMembersView = z.object({ members: z.array(ZMember), invitations: z.array(ZInvitation) });

export const ZInviteInput = z.strictObject({ email: ZEmail, role: ZRole });
/** The link is in this answer only: only the token's hash is stored. */
export const ZCreatedInvitation = ZInvitation.extend({ url: z.string(), token: z.string() });

export const ZAccountIdInput = z.strictObject({ account_id: z.string().max(64) });
export const ZChangeRoleInput = ZAccountIdInput.extend({ role: ZRole });
export const ZInvitationIdInput = z.strictObject({ id: z.string().max(64) });

const INVITATION_TOKEN = /^ali_[A-Za-z0-9_-]{43}$/;
export const ZInvitationToken = z.string().regex(INVITATION_TOKEN, 'is not a valid invitation link');

/** What the invitation page shows before anyone accepts. */
export const ZInvitationPreview = z.object({
  organization: z.object({ id: z.string(), name: z.string() }),
  email: z.string(),
  role: ZRole,
  expires_at: z.string(),
  /** Whether an account with this email exists (sign in to accept) or not (choose a password). */
  account_exists: z.boolean(),
});

export const ZAcceptInput = z.strictObject({
  token: ZInvitationToken,
  /** Only when no account has the invitation's email yet: the new account's password. */
  password: z.string().max(256).optional(),
});

