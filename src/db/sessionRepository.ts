/**
 * Server-side sessions. The cookie holds a random token; the database holds its SHA-256, so logging
 * out (deleting the document) ends the session everywhere at once.
 */
import { z } from 'zod';
import { generateSessionToken } from '../domain/account';
import { ZRole } from '../domain/roles';
import type { SessionDoc, SessionEnd } from './documents';
import type { Collections } from './database';

/** An ended session exactly as `endFor` writes it: nothing more (no account), nothing of another type. */
const ZEndedSession = z.strictObject({
  _id: z.string(),
  ended: z.strictObject({ reason: z.enum(['removed', 'left']), org_id: z.string().max(64), by_role: ZRole, at: z.date() }),
  expires_at: z.date(),
});

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
    // An ended session (`endFor`) keeps its `_id` only to say why it ended.
    if (!doc || 'ended' in doc) return null;
    if (doc.expires_at <= now || now.getTime() - doc.last_seen_at.getTime() >= SESSION_POLICY.idleMs) return null;
    if (now.getTime() - doc.last_seen_at.getTime() >= SESSION_POLICY.touchEveryMs) {
      await this.c.sessions.updateOne({ _id: hash }, { $set: { last_seen_at: now } });
    }
    return doc;
  }

  /**
   * Ends every session of an account in one organization (the member was removed or left): each becomes
   * an ended session, with no account in it, whose cookie's next request is refused and told why
   * (`endOf`); it is cleared with the expired ones.
   */
  async endFor(accountId: string, orgId: string, end: SessionEnd): Promise<void> {
    const sessions = await this.c.sessions.find({ account_id: accountId, org_id: orgId }, { projection: { _id: 1, expires_at: 1 } }).toArray();
    for (const { _id, expires_at } of sessions) await this.c.endedSessions.replaceOne({ _id }, { ended: end, expires_at });
    // A session started between the read and the replacements (a sign-in racing the removal) ends too, untold.
    await this.c.sessions.deleteMany({ account_id: accountId, org_id: orgId });
  }

  /** Why the session with this token hash was ended by a membership change, or null (unknown, logged out, expired). */
  async endOf(hash: string, now: Date): Promise<SessionEnd | null> {
    // The row is read as this service writes it, or not at all: a row of another shape (written by hand,
    // or a live session's fields beside `ended`) tells the person nothing rather than something false.
    const parsed = ZEndedSession.safeParse(await this.c.endedSessions.findOne({ _id: hash }));
    return parsed.success && parsed.data.expires_at > now ? parsed.data.ended : null;
  }

  async delete(hash: string): Promise<void> {
    await this.c.sessions.deleteOne({ _id: hash });
  }

  /** Removes sessions past their absolute end; idle ones are refused by findLive and go with these later. */
  async deleteExpired(now: Date): Promise<void> {
    await this.c.sessions.deleteMany({ expires_at: { $lte: now } });
  }
}
