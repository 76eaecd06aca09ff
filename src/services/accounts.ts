/**
 * Dashboard accounts and sessions: sign-up (account plus a free-plan organization it owns), sign-in with
 * throttling and a fresh session each time, switching organization, sign-out that deletes the session,
 * and the session lookup behind every dashboard procedure, which reads the member's role afresh.
 */
import type { Logger } from 'pino';
import { looksLikeSessionToken, hashSessionToken, type TAccountView, type TLoginInput, type TSignupInput } from '../domain/account';
import { AppError, ACCOUNT_MESSAGES } from '../domain/errors';
import type { Clock } from '../domain/time';
import type { AccountRepository } from '../db/accountRepository';
import type { AccountDoc, MemberDoc } from '../db/documents';
import type { MemberRepository } from '../db/memberRepository';
import type { OrgRepository } from '../db/orgRepository';
import type { SessionRepository } from '../db/sessionRepository';
import type { SessionPrincipal } from './auth';
import type { SelfAudit } from './selfAudit';
import type { AuthThrottle } from './authThrottle';
import { dummyPasswordHash, hashPassword, needsRehash, verifyPassword } from './passwords';

export interface StartedSession {
  token: string;
  expiresAt: Date;
  view: TAccountView;
}

export interface AccountServiceOptions {
  accounts: AccountRepository;
  members: MemberRepository;
  sessions: SessionRepository;
  orgs: OrgRepository;
  throttle: AuthThrottle;
  audit: SelfAudit;
  clock: Clock;
  log: Logger;
}

export class AccountService {
  private readonly accounts: AccountRepository;
  private readonly members: MemberRepository;
  private readonly sessions: SessionRepository;
  private readonly orgs: OrgRepository;
  private readonly throttle: AuthThrottle;
  private readonly audit: SelfAudit;
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(options: AccountServiceOptions) {
    ({
      accounts: this.accounts,
      members: this.members,
      sessions: this.sessions,
      orgs: this.orgs,
      throttle: this.throttle,
      audit: this.audit,
      clock: this.clock,
      log: this.log,
    } = options);
    // Computed now rather than on the first sign-in with an unknown email, which would otherwise be slower.
    dummyPasswordHash().catch(() => undefined);
  }

  /** Creates the account and its organization on the free plan, with the account as its owner, and signs in. */
  async signup(input: TSignupInput, address: string): Promise<StartedSession> {
    await this.throttle.admitSignup(address, this.clock.now());
    // Checked first so a taken email costs no organization; the unique index still decides races.
    if (await this.accounts.findByEmail(input.email)) throw emailTaken();
    const account = await this.createAccount(input.email, input.password);
    const now = this.clock.now();
    const org = await this.orgs.create({ name: input.organization_name, plan: 'free', monthlyCap: null }, now);
    const member = await this.members.add({ orgId: org._id, accountId: account._id, email: account.email, role: 'owner' }, now);
    if (!member) throw new Error(`new account ${account._id} is already a member of new organization ${org._id}`);
    this.log.info({ accountId: account._id, orgId: org._id }, 'account created');
    return this.startSession(account, member);
  }

  /** A new account with this email (an invitation accepted by someone without one); 409 when the email is taken. */
  async createAccount(email: string, password: string): Promise<AccountDoc> {
    const account = await this.accounts.create({ email, passwordHash: await hashPassword(password) }, this.clock.now());
    if (!account) throw emailTaken();
    return account;
  }

  /**
   * Signs in, to the organization the account joined first. Unknown email, wrong password and a
   * throttled account all look alike from outside, apart from the 429, which is also given for emails
   * that do not exist. A wrong password for a member's email is recorded in each of their organizations.
   */
  async login(input: TLoginInput, address: string): Promise<StartedSession> {
    const account = await this.checkPassword(input.email, input.password, address);
    const memberships = await this.members.ofAccount(account._id);
    const first = memberships.sort((a, b) => a.created_at.getTime() - b.created_at.getTime())[0];
    if (!first) throw new AppError('NO_ORGANIZATION', ACCOUNT_MESSAGES.noOrganization);
    return this.startSession(account, first);
  }

  /** The account whose email and password these are, throttled like a sign-in (accepting an invitation asks this too). */
  async checkPassword(email: string, password: string, address: string): Promise<AccountDoc> {
    await this.throttle.admitLogin(email, address, this.clock.now());
    const account = await this.accounts.findByEmail(email);
    const matches = await verifyPassword(account?.password_hash ?? (await dummyPasswordHash()), password);
    if (!account || !matches) {
      if (account) await this.recordFailedSignIn(account, address);
      throw new AppError('INVALID_CREDENTIALS', ACCOUNT_MESSAGES.invalidCredentials);
    }
    await this.throttle.loginSucceeded(email);
    if (needsRehash(account.password_hash)) await this.accounts.setPasswordHash(account._id, await hashPassword(password));
    return account;
  }

  /** Moves the signed-in person to another of their organizations, with a new session (the old one ends). */
  async switchTo(principal: SessionPrincipal, orgId: string): Promise<StartedSession> {
    const account = await this.accounts.get(principal.accountId);
    const member = account ? await this.members.find(orgId, account._id) : null;
    if (!account || !member) throw new AppError('NOT_FOUND', 'You are not a member of that organization');
    await this.sessions.delete(principal.sessionHash);
    return this.startSession(account, member);
  }

  /** Starts a session in the organization of `member` (after an invitation is accepted, for one). */
  async sessionFor(accountId: string, member: MemberDoc): Promise<StartedSession> {
    const account = await this.accounts.get(accountId);
    if (!account) throw new AppError('NOT_SIGNED_IN', ACCOUNT_MESSAGES.notSignedIn);
    return this.startSession(account, member);
  }

  async findByEmail(email: string): Promise<AccountDoc | null> {
    return this.accounts.findByEmail(email);
  }

  /** Ends the session for good: the token stops working at once, wherever it is. */
  async logout(principal: SessionPrincipal): Promise<void> {
    await this.sessions.delete(principal.sessionHash);
  }

  /** Ends the session a cookie names, if any (sign-in rotates: the old session does not survive it). */
  async endSessionOf(token: string | undefined): Promise<void> {
    if (token && looksLikeSessionToken(token)) await this.sessions.delete(hashSessionToken(token));
  }

  /**
   * The signed-in principal for a cookie's token, or null. The role is read at every request, so a
   * member removed or demoted is refused from their next request on, whichever instance serves it.
   */
  async authenticate(token: string | undefined): Promise<SessionPrincipal | null> {
    if (!token || !looksLikeSessionToken(token)) return null;
    const hash = hashSessionToken(token);
    const session = await this.sessions.findLive(hash, this.clock.now());
    if (!session) return null;
    const member = await this.members.find(session.org_id, session.account_id);
    if (!member) {
      await this.sessions.delete(hash);
      return null;
    }
    return { kind: 'session', tenant: session.org_id, accountId: session.account_id, email: member.email, role: member.role, sessionHash: hash };
  }

  /** The signed-in principal, or 401 "Not signed in": every session-only surface asks this. */
  async requireSession(token: string | undefined): Promise<SessionPrincipal> {
    const principal = await this.authenticate(token);
    if (!principal) throw new AppError('NOT_SIGNED_IN', ACCOUNT_MESSAGES.notSignedIn);
    return principal;
  }

  async view(principal: SessionPrincipal): Promise<TAccountView> {
    const account = await this.accounts.get(principal.accountId);
    if (!account) throw new AppError('NOT_SIGNED_IN', ACCOUNT_MESSAGES.notSignedIn);
    return this.viewOf(account, principal.tenant);
  }

  private async viewOf(account: AccountDoc, orgId: string): Promise<TAccountView> {
    const memberships = (await this.members.ofAccount(account._id)).sort((a, b) => a.created_at.getTime() - b.created_at.getTime());
    const orgs = new Map((await Promise.all(memberships.map((m) => this.orgs.get(m.org_id)))).flatMap((org) => (org ? [[org._id, org] as const] : [])));
    const current = orgs.get(orgId);
    const role = memberships.find((m) => m.org_id === orgId)?.role;
    if (!current || !role) throw new AppError('NOT_SIGNED_IN', ACCOUNT_MESSAGES.notSignedIn);
    const { id, name, plan, monthly_cap } = this.orgs.view(current);
    return {
      account: { id: account._id, email: account.email, created_at: account.created_at.toISOString() },
      organization: { id, name, plan, monthly_cap },
      role,
      organizations: memberships.flatMap((m) => {
        const org = orgs.get(m.org_id);
        return org ? [{ id: org._id, name: org.name, role: m.role }] : [];
      }),
    };
  }

  private async startSession(account: AccountDoc, member: MemberDoc): Promise<StartedSession> {
    const now = this.clock.now();
    const { token, doc } = await this.sessions.create(account._id, member.org_id, now);
    void this.sessions.deleteExpired(now).catch((err: unknown) => { this.log.warn({ err }, 'could not delete expired sessions'); });
    return { token, expiresAt: doc.expires_at, view: await this.viewOf(account, member.org_id) };
  }

  /** Into each organization of the account: whoever tries a member's password is on that organization's record. */
  private async recordFailedSignIn(account: AccountDoc, address: string): Promise<void> {
    for (const member of await this.members.ofAccount(account._id)) {
      await this.audit.record(member.org_id, { type: 'anonymous', email: account.email }, 'audit_ledger.signin.failed', { type: 'account', id: account._id, name: account.email }, { client_address: address });
    }
  }
}

function emailTaken(): AppError {
  return new AppError('EMAIL_TAKEN', ACCOUNT_MESSAGES.emailTaken, { fields: ['email'] });
}
