/**
 * Producer claims (ProducerClaimDoc): one immutable document per used or bound API key, written by
 * whichever comes first, its first event or its binding. An insert under the key's id is atomic on
 * MongoDB and on FerretDB alike (a unique `_id`), so exactly one of them wins and both sides see it.
 */
import { PRODUCER_BOUND_ACTION, SELF_AUDIT_ACTIONS, SELF_AUDIT_KEY_ID } from '../domain/selfAudit';
import type { Collections } from './database';
import type { ProducerClaimDoc } from './documents';
import { isDuplicateKey } from './errors';

export class ProducerClaimStore {
  constructor(private readonly c: Collections) {}

  /**
   * The key's claim: the one written first, `claim` if none was. A claim found under another
   * organization is nobody's (key ids are random and global; only a database writer makes one): null.
   */
  async settle(claim: ProducerClaimDoc): Promise<ProducerClaimDoc | null> {
    try {
      await this.c.producerClaims.insertOne(claim);
      return claim;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    const found = await this.c.producerClaims.findOne({ _id: claim._id });
    return found?.org_id === claim.org_id ? found : null;
  }

  /** The key's claim; undefined when it has none yet, null when the one found is another organization's. */
  async find(orgId: string, keyId: string): Promise<ProducerClaimDoc | null | undefined> {
    const found = await this.c.producerClaims.findOne({ _id: keyId });
    if (!found) return undefined;
    return found.org_id === orgId ? found : null;
  }

  /** The organization's claims: every key that is bound or has sent an event since claims were kept. */
  async claimsIn(orgId: string): Promise<ProducerClaimDoc[]> {
    return this.c.producerClaims.find({ org_id: orgId }).toArray();
  }

  /** The producer keys the organization's log binds `keyId` to (its binding entries, oldest first). */
  async loggedBindings(orgId: string, keyId: string): Promise<string[]> {
    const entries = await this.c.events.find({ tenant: orgId, action: PRODUCER_BOUND_ACTION, api_key_id: SELF_AUDIT_KEY_ID, resource_id: keyId }).sort({ seq: 1 }).toArray();
    return entries.map((entry) => (JSON.parse(entry.metadata) as { producer_key?: unknown }).producer_key).filter((key): key is string => typeof key === 'string');
  }

  /**
   * Whether the organization's log holds an event the key sent (not one the service recorded of what
   * the key did): a key used before claims were kept (an upgraded installation) has events and no claim.
   */
  async hasSent(orgId: string, keyId: string): Promise<boolean> {
    for await (const doc of this.c.events.find({ tenant: orgId, api_key_id: keyId }, { projection: { action: 1 } })) {
      if (typeof doc.action === 'string' && !Object.hasOwn(SELF_AUDIT_ACTIONS, doc.action)) return true;
    }
    return false;
  }
}
