/**
 * Server-side sessions. The cookie holds a random token; the database holds its SHA-256, so logging
 * out (deleting the document) ends the session everywhere at once.
 */
import { generateSessionToken } from '../domain/account';
import type { SessionDoc } from './documents';
import type { Collections } from './database';

export const SESSION_POLICY = {
  /** A session ends this long after sign-in, however active. */
  absoluteMs: 7 * 24 * 3_600_000,
  /** …or after this long without a request. */
  idleMs: 24 * 3_600_000,
  /** `last_seen_at` is written at most this often, so reads do not turn into writes. */
  touchEveryMs: 5 * 60_000,
} as const;

export class SessionRepository {
  constructor(private readonly c: Collections) {}

  /** Starts a session; the token goes into the cookie and is never stored. */
  async create(accountId: string, orgId: string, now: Date): Promise<{ token: string; doc: SessionDoc }> {
    const { token, hash } = generateSessionToken();
    const doc: SessionDoc = {
      _id: hash,
      account_id: accountId,
      org_id: orgId,
      created_at: now,
      last_seen_at: now,
      expires_at: new Date(now.getTime() + SESSION_POLICY.absoluteMs),
    };
    await this.c.sessions.insertOne(doc);
    return { token, doc };
  }

  /** The live session with this token hash, or null when unknown, logged out, expired or idle too long. */
  async findLive(hash: string, now: Date): Promise<SessionDoc | null> {
    const doc = await this.c.sessions.findOne({ _id: hash });
    if (!doc) return null;
    if (doc.expires_at <= now || now.getTime() - doc.last_seen_at.getTime() >= SESSION_POLICY.idleMs) return null;
    if (now.getTime() - doc.last_seen_at.getTime() >= SESSION_POLICY.touchEveryMs) {
      await this.c.sessions.updateOne({ _id: hash }, { $set: { last_seen_at: now } });
    }
    return doc;
  }

  /** Ends every session of an account in one organization (the member was removed or left). */
  async deleteFor(accountId: string, orgId: string): Promise<void> {
    await this.c.sessions.deleteMany({ account_id: accountId, org_id: orgId });
  }

  async delete(hash: string): Promise<void> {
    await this.c.sessions.deleteOne({ _id: hash });
  }

  /** Removes sessions past their absolute end; idle ones are refused by findLive and go with these later. */
  async deleteExpired(now: Date): Promise<void> {
    await this.c.sessions.deleteMany({ expires_at: { $lte: now } });
  }
}
