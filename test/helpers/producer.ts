/** A producer's Ed25519 key for tests, and create bodies signed with it as the client package signs them. */
import { randomBytes, sign } from 'node:crypto';
import { signerFromSeed, type Signer } from '../../src/domain/ledger/note';
import { producerMessage, signedContentOf } from '../../src/domain/producerSignature';
import type { EventContent } from '../../src/domain/eventFields';
import { draftsOf, freshStamp } from '../../src/services/idempotency';
import type { TestApp } from './harness';

export function producerSigner(name = 'producer.test'): Signer {
  return signerFromSeed(name, randomBytes(32));
}

/** `body` with its timestamp given (now, if none) and signed by `signer` for an event of organization `orgId`'s key. */
export function signedBody(body: Record<string, unknown>, orgId: string, signer: Signer): Record<string, unknown> {
  const given = { ...body, timestamp: body.timestamp ?? new Date().toISOString() };
  const signature = sign(null, Buffer.from(producerMessage(signedContentOf(given, orgId)), 'utf8'), signer.privateKey);
  return { ...given, producer_signature: signature.toString('base64') };
}

/**
 * Stores `content` as an event of key `keyId` of organization `orgId` through the service's own write
 * path, past its door (no key, cap or signature check): what code holding the service's signing key and
 * database could run. Answers the stored event's id.
 */
export async function storedPastTheDoor(app: TestApp, orgId: string, keyId: string, content: EventContent): Promise<string> {
  const [doc] = await app.services.ingest.writeOwn(draftsOf(orgId, [content], freshStamp(1, new Date(), keyId)));
  if (!doc) throw new Error('the service\'s own write path stored nothing');
  return doc._id;
}
