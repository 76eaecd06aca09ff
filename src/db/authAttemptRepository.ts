/** Sign-in and sign-up attempts, kept briefly so throttling holds across processes. */
import { randomUUID } from 'node:crypto';
import type { Collections } from './database';

export class AuthAttemptRepository {
  constructor(private readonly c: Collections) {}

  /** Records one attempt in each bucket. */
  async record(buckets: readonly string[], now: Date): Promise<void> {
    await this.c.authAttempts.insertMany(buckets.map((bucket) => ({ _id: randomUUID(), bucket, at: now })));
  }

  /** Attempts in a bucket since a time. */
  async countSince(bucket: string, since: Date): Promise<number> {
    return this.c.authAttempts.countDocuments({ bucket, at: { $gt: since } });
  }

  async clear(bucket: string): Promise<void> {
    await this.c.authAttempts.deleteMany({ bucket });
  }

  async deleteOlderThan(before: Date): Promise<void> {
    await this.c.authAttempts.deleteMany({ at: { $lte: before } });
  }
}
