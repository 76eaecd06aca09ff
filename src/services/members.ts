/**
 * Members and invitations: who belongs to an organization with which role, how people are invited and
 * join, and the rules that keep an organization governable (an owner always remains; owners are managed
 * by owners only). Every change is recorded in the organization's own log (services/selfAudit.ts).
 *
 * "At least one owner" holds without transactions (FerretDB has none, and its updates are not atomic):
 * a change that may drop an owner is made, then the owners are counted, and the change is undone and
 * refused if none is left. Two owners demoting each other at once may then both be refused, never both
 * let through: each sees its own change, and the other's, before it answers.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { hashSessionToken, looksLikeSessionToken, ZNewPassword } from '../domain/account';
import { AppError, ACCOUNT_MESSAGES, type TSessionEnded } from '../domain/errors';
import { canManage, INVITATION_TTL_MS, type Role, type TInvitation, type TMember } from '../domain/roles';
import type { Clock } from '../domain/time';
import { fieldValidationError } from '../domain/validation';
import type { InvitationDoc, MemberDoc } from '../db/documents';
import type { InvitationRepository } from '../db/invitationRepository';
import type { MemberRepository } from '../db/memberRepository';
import type { OrgRepository } from '../db/orgRepository';
import type { SessionRepository } from '../db/sessionRepository';
import type { AccountService, StartedSession } from './accounts';
import type { SessionPrincipal } from './auth';
import type { Mailer } from './mailer';
import { actorOf, type SelfAudit } from './selfAudit';

export interface MemberServiceOptions {
  members: MemberRepository;
  invitations: InvitationRepository;
  sessions: SessionRepository;
  orgs: OrgRepository;
  accounts: AccountService;
  audit: SelfAudit;
  mailer: Mailer | null;
  /** PUBLIC_URL: the invitation link's origin (unset: the dashboard puts its own in front of the path). */
  publicUrl: string | undefined;
  clock: Clock;
  log: Logger;
}

export class MemberService {
  private readonly members: MemberRepository;
  private readonly invitations: InvitationRepository;
  private readonly sessions: SessionRepository;
  private readonly orgs: OrgRepository;
  private readonly accounts: AccountService;
  private readonly audit: SelfAudit;
  private readonly mailer: Mailer | null;
  private readonly publicUrl: string | undefined;
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(options: MemberServiceOptions) {
    ({
      members: this.members,
      invitations: this.invitations,
      sessions: this.sessions,
      orgs: this.orgs,
      accounts: this.accounts,
      audit: this.audit,
      mailer: this.mailer,
      publicUrl: this.publicUrl,
      clock: this.clock,
      log: this.log,
    } = options);
  }

  async list(principal: SessionPrincipal): Promise<{ members: TMember[]; invitations: TInvitation[] }> {
    const [members, invitations] = await Promise.all([this.members.ofOrg(principal.tenant), this.invitations.pending(principal.tenant, this.clock.now())]);
    return {
      members: members.sort((a, b) => a.created_at.getTime() - b.created_at.getTime()).map(memberView),
      invitations: invitations.sort((a, b) => a.created_at.getTime() - b.created_at.getTime()).map(invitationView),
    };
  }

  /** A single-use link for `email` to join with `role`, valid for INVITATION_TTL_MS; mailed when SMTP is set. */
  async invite(principal: SessionPrincipal, email: string, role: Role): Promise<TInvitation & { url: string; token: string }> {
    if (!canManage(principal.role, role)) throw roleRefused(principal.role, `give the role ${role}`);
    const existing = await this.accounts.findByEmail(email);
    if (existing && (await this.members.find(principal.tenant, existing._id))) throw new AppError('ALREADY_MEMBER', ACCOUNT_MESSAGES.alreadyMember, { fields: ['email'] });
    const now = this.clock.now();
    const { token, hash } = generateInvitationToken();
    const doc = await this.invitations.create({ hash, orgId: principal.tenant, email, role, invitedBy: principal.email, expiresAt: new Date(now.getTime() + INVITATION_TTL_MS) }, now);
    const url = `${this.publicUrl?.replace(/\/$/, '') ?? ''}/invite/${token}`;
    await this.audit.record(principal.tenant, actorOf(principal), 'audit_ledger.member.invited', { type: 'invitation', id: doc.id, name: email }, { email, role, expires_at: doc.expires_at.toISOString() });
    if (this.mailer && this.publicUrl) {
      const org = await this.orgs.get(principal.tenant);
      // The invitation stands whether or not the mail goes: the inviter sees the link either way.
      await this.mailer.sendInvitation({ to: email, organization: org?.name ?? principal.tenant, role, url, expiresAt: doc.expires_at, invitedBy: principal.email })
        .catch((err: unknown) => { this.log.warn({ err, invitation: doc.id }, 'could not mail an invitation'); });
    }
    return { ...invitationView(doc), url, token };
  }

  async revokeInvitation(principal: SessionPrincipal, id: string): Promise<{ revoked: true }> {
    const pending = (await this.invitations.pending(principal.tenant, this.clock.now())).find((inv) => inv.id === id);
    if (!pending) throw new AppError('INVITATION_NOT_FOUND', ACCOUNT_MESSAGES.invitationNotFound);
    if (!canManage(principal.role, pending.role)) throw roleRefused(principal.role, `revoke an invitation with the role ${pending.role}`);
    await this.invitations.remove(pending);
    await this.audit.record(principal.tenant, actorOf(principal), 'audit_ledger.invitation.revoked', { type: 'invitation', id, name: pending.email }, { email: pending.email, role: pending.role });
    return { revoked: true };
  }

  /** What the invitation page shows: the organization, the role, whether to sign in or choose a password. */
  async preview(token: string): Promise<{ organization: { id: string; name: string }; email: string; role: Role; expires_at: string; account_exists: boolean }> {
    const invitation = await this.usable(token);
    const org = await this.orgs.get(invitation.org_id);
    if (!org) throw new AppError('INVITATION_NOT_FOUND', ACCOUNT_MESSAGES.invitationNotFound);
    return {
      organization: { id: org._id, name: org.name },
      email: invitation.email,
      role: invitation.role,
      expires_at: invitation.expires_at.toISOString(),
      account_exists: (await this.accounts.findByEmail(invitation.email)) !== null,
    };
  }

  /**
   * Accepts: the invitation's email must be the account's. Signed in as that account, nothing else is
   * asked; otherwise its password (an existing account) or a new one (no account yet). Single use: of
   * two accepts only one gets past `InvitationRepository.use`.
   */
  async accept(token: string, who: { session: SessionPrincipal | null; password: string | undefined; address: string }): Promise<StartedSession> {
    const invitation = await this.usable(token);
    let account = await this.accounts.findByEmail(invitation.email);
    if (who.session && who.session.accountId !== account?._id) throw new AppError('INVITATION_FOR_OTHER_EMAIL', ACCOUNT_MESSAGES.invitationForOtherEmail);
    if (!who.session) {
      if (who.password === undefined) throw new AppError('VALIDATION_FAILED', 'Invalid request: password is required', { fields: ['password'] });
      account = account
        ? await this.accounts.checkPassword(invitation.email, who.password, who.address)
        : await this.accounts.createAccount(invitation.email, checkedNewPassword(who.password));
    }
    if (!account) throw new AppError('INVITATION_NOT_FOUND', ACCOUNT_MESSAGES.invitationNotFound);
    if (await this.members.find(invitation.org_id, account._id)) throw new AppError('ALREADY_MEMBER', ACCOUNT_MESSAGES.alreadyMember);
    const now = this.clock.now();
    if (!(await this.invitations.use(invitation, account._id, now))) throw new AppError('INVITATION_USED', ACCOUNT_MESSAGES.invitationUsed);
    await this.invitations.remove(invitation);
    const member = await this.members.add({ orgId: invitation.org_id, accountId: account._id, email: account.email, role: invitation.role }, now);
    if (!member) throw new AppError('ALREADY_MEMBER', ACCOUNT_MESSAGES.alreadyMember);
    await this.audit.record(invitation.org_id, { type: 'member', accountId: account._id, email: account.email, role: member.role }, 'audit_ledger.member.joined', { type: 'member', id: account._id, name: account.email }, { role: member.role, invitation_id: invitation.id, invited_by: invitation.invited_by });
    if (who.session) await this.sessions.delete(who.session.sessionHash);
    return this.accounts.sessionFor(account._id, member);
  }

  async changeRole(principal: SessionPrincipal, accountId: string, role: Role): Promise<TMember> {
    const target = await this.target(principal, accountId);
    if (!canManage(principal.role, target.role) || !canManage(principal.role, role)) throw roleRefused(principal.role, `change the role ${target.role} into ${role}`);
    if (target.role === role) return memberView(target);
    await this.members.setRole(principal.tenant, accountId, role);
    if (target.role === 'owner' && (await this.members.owners(principal.tenant)) === 0) {
      await this.members.setRole(principal.tenant, accountId, 'owner');
      throw new AppError('LAST_OWNER', ACCOUNT_MESSAGES.lastOwner);
    }
    await this.audit.record(principal.tenant, actorOf(principal), 'audit_ledger.member.role_changed', { type: 'member', id: accountId, name: target.email }, { from: target.role, to: role });
    return memberView({ ...target, role });
  }

  /** Removes a member (or, for oneself, leaves): their sessions in this organization end at once. */
  async remove(principal: SessionPrincipal, accountId: string): Promise<{ removed: true }> {
    const self = accountId === principal.accountId;
    const target = await this.target(principal, accountId);
    if (!self && !canManage(principal.role, target.role)) throw roleRefused(principal.role, `remove a member with the role ${target.role}`);
    if (!(await this.members.remove(principal.tenant, accountId))) throw new AppError('MEMBER_NOT_FOUND', ACCOUNT_MESSAGES.memberNotFound);
    if (target.role === 'owner' && (await this.members.owners(principal.tenant)) === 0) {
      await this.members.restore(target);
      throw new AppError('LAST_OWNER', ACCOUNT_MESSAGES.lastOwner);
    }
    await this.sessions.endFor(accountId, principal.tenant, { reason: self ? 'left' : 'removed', org_id: principal.tenant, by_role: principal.role, at: this.clock.now() });
    const action = self ? 'audit_ledger.member.left' : 'audit_ledger.member.removed';
    await this.audit.record(principal.tenant, actorOf(principal), action, { type: 'member', id: accountId, name: target.email }, { role: target.role });
    return { removed: true };
  }

  /**
   * Why a session cookie no longer signs in, when a membership change ended it: what the refused
   * person is told (the organization they were in, and who ended it, by role). Null for any other end.
   */
  async sessionEnd(token: string | undefined): Promise<TSessionEnded | null> {
    if (!token || !looksLikeSessionToken(token)) return null;
    const end = await this.sessions.endOf(hashSessionToken(token), this.clock.now());
    if (!end) return null;
    const org = await this.orgs.get(end.org_id);
    return { reason: end.reason, organization: org?.name ?? end.org_id, by_role: end.by_role };
  }

  private async target(principal: SessionPrincipal, accountId: string): Promise<MemberDoc> {
    const target = await this.members.find(principal.tenant, accountId);
    if (!target) throw new AppError('MEMBER_NOT_FOUND', ACCOUNT_MESSAGES.memberNotFound);
    return target;
  }

  /** The invitation a link names, unless unknown, expired or used. */
  private async usable(token: string): Promise<InvitationDoc> {
    const invitation = await this.invitations.byHash(hashInvitationToken(token));
    if (!invitation) throw new AppError('INVITATION_NOT_FOUND', ACCOUNT_MESSAGES.invitationNotFound);
    if (invitation.expires_at <= this.clock.now()) throw new AppError('INVITATION_EXPIRED', ACCOUNT_MESSAGES.invitationExpired);
    return invitation;
  }
}

function checkedNewPassword(password: string): string {
  const parsed = ZNewPassword.safeParse(password);
  if (!parsed.success) throw fieldValidationError('password', parsed.error.issues);
  return parsed.data;
}

function roleRefused(role: Role, what: string): AppError {
  return new AppError('INSUFFICIENT_ROLE', `Your role (${role}) does not allow you to ${what}`);
}

function memberView(doc: MemberDoc): TMember {
  return { account_id: doc.account_id, email: doc.email, role: doc.role, joined_at: doc.created_at.toISOString() };
}

function invitationView(doc: InvitationDoc): TInvitation {
  return { id: doc.id, email: doc.email, role: doc.role, invited_by: doc.invited_by, created_at: doc.created_at.toISOString(), expires_at: doc.expires_at.toISOString() };
}

/** A new invitation's secret (in its link only) and the hash that is stored. */
export function generateInvitationToken(): { token: string; hash: string } {
  const token = `ali_${randomBytes(32).toString('base64url')}`;
  return { token, hash: hashInvitationToken(token) };
}

export function hashInvitationToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
