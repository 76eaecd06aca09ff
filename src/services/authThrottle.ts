/**
 * Throttling of sign-in (per account and per client address) and sign-up (per client address).
 * Every attempt is recorded before it is judged, and the judgement counts it, so a burst of parallel
 * attempts cannot slip through between a count and a record. Attempts live in the database so the
 * limits hold across processes.
 */
import { AppError, ACCOUNT_MESSAGES } from '../domain/errors';
import type { AuthAttemptRepository } from '../db/authAttemptRepository';

export interface ThrottlePolicy {
  windowMs: number;
  /** Sign-in attempts per email in the window: a guessing attack on one account. */
  perEmail: number;
  /** Sign-in attempts per client address in the window: one source trying many accounts. */
  perAddress: number;
  /** Sign-ups per client address in the window. */
  signupsPerAddress: number;
}

export const DEFAULT_THROTTLE: ThrottlePolicy = { windowMs: 15 * 60_000, perEmail: 5, perAddress: 30, signupsPerAddress: 10 };

const CLEANUP_EVERY_MS = 60_000;

export class AuthThrottle {
  private lastCleanup = 0;

  constructor(
    private readonly attempts: AuthAttemptRepository,
    readonly policy: ThrottlePolicy = DEFAULT_THROTTLE,
  ) {}

  /** Records a sign-in attempt; throws 429 when the account or the address has tried too often. */
  async admitLogin(email: string, address: string, now: Date): Promise<void> {
    const byEmail = `login-email:${email}`;
    const byAddress = `login-ip:${address}`;
    await this.attempts.record([byEmail, byAddress], now);
    const since = new Date(now.getTime() - this.policy.windowMs);
    const [emailCount, addressCount] = await Promise.all([this.attempts.countSince(byEmail, since), this.attempts.countSince(byAddress, since)]);
    this.cleanUp(now);
    if (emailCount > this.policy.perEmail || addressCount > this.policy.perAddress) {
      throw new AppError('TOO_MANY_ATTEMPTS', ACCOUNT_MESSAGES.tooManyAttempts, this.retryAfter());
    }
  }

  /** After a successful sign-in the account's count starts again; the address's does not. */
  async loginSucceeded(email: string): Promise<void> {
    await this.attempts.clear(`login-email:${email}`);
  }

  async admitSignup(address: string, now: Date): Promise<void> {
    const bucket = `signup-ip:${address}`;
    await this.attempts.record([bucket], now);
    const count = await this.attempts.countSince(bucket, new Date(now.getTime() - this.policy.windowMs));
    if (count > this.policy.signupsPerAddress) throw new AppError('TOO_MANY_ATTEMPTS', ACCOUNT_MESSAGES.tooManySignups, this.retryAfter());
  }

  /**
   * Every 429 says when to come back (docs/api.md): after a whole window without trying, every attempt
   * counted has aged out. Not sooner: refused attempts are counted too, so a shorter promise would be
   * broken by whoever retries on it.
   */
  private retryAfter(): { retryAfter: number } {
    return { retryAfter: Math.ceil(this.policy.windowMs / 1000) };
  }

  private cleanUp(now: Date): void {
    if (now.getTime() - this.lastCleanup < CLEANUP_EVERY_MS) return;
    this.lastCleanup = now.getTime();
    void this.attempts.deleteOlderThan(new Date(now.getTime() - this.policy.windowMs)).catch(() => undefined);
  }
}
