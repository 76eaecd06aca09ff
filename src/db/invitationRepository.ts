/** Invitations: stored by the hash of their link's token, used at most once. */
import { newPublicId } from '../domain/apiKey';
import type { Role } from '../domain/roles';
import type { InvitationDoc } from './documents';
import type { Collections } from './database';
import { insertUnlessTaken } from './errors';

export class InvitationRepository {
  constructor(private readonly c: Collections) {}

  async create(input: { hash: string; orgId: string; email: string; role: Role; invitedBy: string; expiresAt: Date }, now: Date): Promise<InvitationDoc> {
    const doc: InvitationDoc = { _id: input.hash, id: newPublicId('inv'), org_id: input.orgId, email: input.email, role: input.role, invited_by: input.invitedBy, created_at: now, expires_at: input.expiresAt };
    await this.c.invitations.insertOne(doc);
    return doc;
  }

  async byHash(hash: string): Promise<InvitationDoc | null> {
    return this.c.invitations.findOne({ _id: hash });
  }

  async pending(orgId: string, now: Date): Promise<InvitationDoc[]> {
    const all = await this.c.invitations.find({ org_id: orgId }).sort({ org_id: 1, id: 1 }).toArray();
    return all.filter((inv) => inv.expires_at > now);
  }

  /** The first caller to use the invitation gets true; every later one false. */
  async use(invitation: InvitationDoc, accountId: string, now: Date): Promise<boolean> {
    return insertUnlessTaken(this.c.invitationUses, { _id: invitation.id, account_id: accountId, at: now });
  }

  /** Deletes an invitation its caller has already read (revoked, or used). */
  async remove(invitation: InvitationDoc): Promise<void> {
    await this.c.invitations.deleteOne({ _id: invitation._id });
  }
}
