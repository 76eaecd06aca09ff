/** Dashboard accounts: one per email; which organizations an account belongs to is in `members`. */
import { newPublicId } from '../domain/apiKey';
import type { AccountDoc } from './documents';
import type { Collections } from './database';
import { insertUnlessTaken } from './errors';

export class AccountRepository {
  constructor(private readonly c: Collections) {}

  /** Creates the account; null when the email is taken (the unique index decides, atomically). */
  async create(input: { email: string; passwordHash: string }, now: Date): Promise<AccountDoc | null> {
    const doc: AccountDoc = { _id: newPublicId('acct'), email: input.email, password_hash: input.passwordHash, created_at: now };
    return (await insertUnlessTaken(this.c.accounts, doc)) ? doc : null;
  }

  async findByEmail(email: string): Promise<AccountDoc | null> {
    return this.c.accounts.findOne({ email });
  }

  async get(id: string): Promise<AccountDoc | null> {
    return this.c.accounts.findOne({ _id: id });
  }

  async setPasswordHash(id: string, passwordHash: string): Promise<void> {
    await this.c.accounts.updateOne({ _id: id }, { $set: { password_hash: passwordHash } });
  }
}
