/** A producer's Ed25519 key for tests, and create bodies signed with it as the client package signs them. */
import { randomBytes, sign } from 'node:crypto';
import { signerFromSeed, type Signer } from '../../src/domain/ledger/note';
import { producerMessage, signedContentOf } from '../../src/domain/producerSignature';

export function producerSigner(name = 'producer.test'): Signer {
  return signerFromSeed(name, randomBytes(32));
}

/** `body` with its timestamp given (now, if none) and signed by `signer` for an event of organization `orgId`'s key. */
export function signedBody(body: Record<string, unknown>, orgId: string, signer: Signer): Record<string, unknown> {
  const given = { ...body, timestamp: body.timestamp ?? new Date().toISOString() };
  const signature = sign(null, Buffer.from(producerMessage(signedContentOf(given, orgId)), 'utf8'), signer.privateKey);
  return { ...given, producer_signature: signature.toString('base64') };
}
