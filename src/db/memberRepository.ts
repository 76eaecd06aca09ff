/** Memberships: which accounts belong to an organization, and with which role. */
import { newPublicId } from '../domain/apiKey';
import type { Role } from '../domain/roles';
import type { MemberDoc } from './documents';
import type { Collections } from './database';
import { insertUnlessTaken } from './errors';

export class MemberRepository {
  constructor(private readonly c: Collections) {}

  /** Adds the account to the organization; null when it is a member already (the unique index decides). */
  async add(input: { orgId: string; accountId: string; email: string; role: Role }, now: Date): Promise<MemberDoc | null> {
    const doc: MemberDoc = { _id: newPublicId('mem'), org_id: input.orgId, account_id: input.accountId, email: input.email, role: input.role, created_at: now };
    return (await insertUnlessTaken(this.c.members, doc)) ? doc : null;
  }

  /** Puts a membership back exactly as it was (undoing a removal that would have left no owner). */
  async restore(doc: MemberDoc): Promise<void> {
    await insertUnlessTaken(this.c.members, doc);
  }

  async find(orgId: string, accountId: string): Promise<MemberDoc | null> {
    return this.c.members.findOne({ org_id: orgId, account_id: accountId });
  }

  async ofOrg(orgId: string): Promise<MemberDoc[]> {
    return this.c.members.find({ org_id: orgId }).sort({ org_id: 1, account_id: 1 }).toArray();
  }

  async ofAccount(accountId: string): Promise<MemberDoc[]> {
    return this.c.members.find({ account_id: accountId }).toArray();
  }

  async owners(orgId: string): Promise<number> {
    return (await this.ofOrg(orgId)).filter((m) => m.role === 'owner').length;
  }

  async setRole(orgId: string, accountId: string, role: Role): Promise<void> {
    await this.c.members.updateOne({ org_id: orgId, account_id: accountId }, { $set: { role } });
  }

  async remove(orgId: string, accountId: string): Promise<boolean> {
    return (await this.c.members.deleteOne({ org_id: orgId, account_id: accountId })).deletedCount === 1;
  }
}
