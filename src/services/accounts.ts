/**
 * Dashboard accounts and sessions: sign-up (account plus a free-plan organization), sign-in with
 * throttling and a fresh session each time, sign-out that deletes the session, and the session lookup
 * behind every dashboard procedure.
 */
import type { Logger } from 'pino';
import { looksLikeSessionToken, hashSessionToken, type TAccountView, type TLoginInput, type TSignupInput } from '../domain/account';
import { AppError, ACCOUNT_MESSAGES } from '../domain/errors';
import type { Clock } from '../domain/time';
import type { AccountRepository } from '../db/accountRepository';
import type { AccountDoc } from '../db/documents';
import type { OrgRepository } from '../db/orgRepository';
import type { SessionRepository } from '../db/sessionRepository';
import type { SessionPrincipal } from './auth';
import type { AuthThrottle } from './authThrottle';
import { dummyPasswordHash, hashPassword, needsRehash, verifyPassword } from './passwords';

export interface StartedSession {
  token: string;
  expiresAt: Date;
  view: TAccountView;
}

export class AccountService {
  constructor(
    private readonly accounts: AccountRepository,
    private readonly sessions: SessionRepository,
    private readonly orgs: OrgRepository,
    private readonly throttle: AuthThrottle,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    // Computed now rather than on the first sign-in with an unknown email, which would otherwise be slower.
    dummyPasswordHash().catch(() => undefined);
  }

  /** Creates the account and its organization on the free plan, and signs in. */
  async signup(input: TSignupInput, address: string): Promise<StartedSession> {
    await this.throttle.admitSignup(address, this.clock.now());
    // Checked first so a taken email costs no organization; the unique index still decides races.
    if (await this.accounts.findByEmail(input.email)) throw new AppError('EMAIL_TAKEN', ACCOUNT_MESSAGES.emailTaken, { fields: ['email'] });
    const passwordHash = await hashPassword(input.password);
    const now = this.clock.now();
    const org = await this.orgs.create({ name: input.organization_name, plan: 'free', monthlyCap: null }, now);
    const account = await this.accounts.create({ email: input.email, passwordHash, orgId: org._id }, now);
    if (!account) {
      await this.orgs.delete(org._id);
      throw new AppError('EMAIL_TAKEN', ACCOUNT_MESSAGES.emailTaken, { fields: ['email'] });
    }
    this.log.info({ accountId: account._id, orgId: org._id }, 'account created');
    return this.startSession(account);
  }

  /**
   * Signs in. Unknown email, wrong password and a throttled account all look alike from outside,
   * apart from the 429, which is also given for emails that do not exist.
   */
  async login(input: TLoginInput, address: string): Promise<StartedSession> {
    await this.throttle.admitLogin(input.email, address, this.clock.now());
    const account = await this.accounts.findByEmail(input.email);
    const matches = await verifyPassword(account?.password_hash ?? (await dummyPasswordHash()), input.password);
    if (!account || !matches) throw new AppError('INVALID_CREDENTIALS', ACCOUNT_MESSAGES.invalidCredentials);
    await this.throttle.loginSucceeded(input.email);
    if (needsRehash(account.password_hash)) await this.accounts.setPasswordHash(account._id, await hashPassword(input.password));
    return this.startSession(account);
  }

  /** Ends the session for good: the token stops working at once, wherever it is. */
  async logout(principal: SessionPrincipal): Promise<void> {
    await this.sessions.delete(principal.sessionHash);
  }

  /** Ends the session a cookie names, if any (sign-in rotates: the old session does not survive it). */
  async endSessionOf(token: string | undefined): Promise<void> {
    if (token && looksLikeSessionToken(token)) await this.sessions.delete(hashSessionToken(token));
  }

  /** The signed-in principal for a cookie's token, or null. */
  async authenticate(token: string | undefined): Promise<SessionPrincipal | null> {
    if (!token || !looksLikeSessionToken(token)) return null;
    const hash = hashSessionToken(token);
    const session = await this.sessions.findLive(hash, this.clock.now());
    if (!session) return null;
    return { kind: 'session', tenant: session.org_id, accountId: session.account_id, sessionHash: hash };
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
    return this.viewOf(account);
  }

  private async viewOf(account: AccountDoc): Promise<TAccountView> {
    const org = await this.orgs.get(account.org_id);
    if (!org) throw new Error(`account ${account._id} names organization ${account.org_id}, which does not exist`);
    const { id, name, plan, monthly_cap } = this.orgs.view(org);
    return {
      account: { id: account._id, email: account.email, created_at: account.created_at.toISOString() },
      organization: { id, name, plan, monthly_cap },
    };
  }

  private async startSession(account: AccountDoc): Promise<StartedSession> {
    const now = this.clock.now();
    const { token, doc } = await this.sessions.create(account._id, account.org_id, now);
    void this.sessions.deleteExpired(now).catch((err: unknown) => { this.log.warn({ err }, 'could not delete expired sessions'); });
    return { token, expiresAt: doc.expires_at, view: await this.viewOf(account) };
  }
}
