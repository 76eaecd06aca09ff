/**
 * Producer claims (ProducerClaimDoc): one immutable document per used or bound API key, written by
 * whichever comes first, its first event or its binding. An insert under the key's id is atomic on
 * MongoDB and on FerretDB alike (a unique `_id`), so exactly one of them wins and both sides see it.
 */
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

  /** The organization's bound keys. */
  async boundIn(orgId: string): Promise<ProducerClaimDoc[]> {
    return (await this.c.producerClaims.find({ org_id: orgId }).toArray()).filter((claim) => claim.producer_key !== null);
  }
}
