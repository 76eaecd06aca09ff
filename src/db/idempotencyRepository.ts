/** Idempotency claims: one per key per organization, taken by a unique insert (the one atomic step both databases offer). */
import { createHash } from 'node:crypto';
import type { Collections } from './database';
import type { IdempotencyClaimDoc } from './documents';
import { insertUnlessTaken } from './errors';

/** A claim's `_id`: one key per organization. */
export function claimIdOf(tenant: string, key: string): string {
  return createHash('sha256').update(`${tenant}\n${key}`).digest('hex');
}

export class IdempotencyRepository {
  constructor(private readonly c: Collections) {}

  /** Takes the claim; false when the key is claimed already (by this request's twin, or long ago). */
  claim(doc: IdempotencyClaimDoc): Promise<boolean> {
    return insertUnlessTaken(this.c.idempotencyClaims, doc, { writeConcern: { w: 'majority', j: true } });
  }

  find(id: string): Promise<IdempotencyClaimDoc | null> {
    return this.c.idempotencyClaims.findOne({ _id: id });
  }

  /** Gives a claim up, if it is still this one (same request, same expiry). */
  async release(doc: Pick<IdempotencyClaimDoc, '_id' | 'request_hash' | 'expires_at'>): Promise<void> {
    await this.c.idempotencyClaims.deleteOne({ _id: doc._id, request_hash: doc.request_hash, expires_at: doc.expires_at });
  }

  async deleteExpired(now: Date): Promise<number> {
    return (await this.c.idempotencyClaims.deleteMany({ expires_at: { $lte: now } })).deletedCount;
  }
}
