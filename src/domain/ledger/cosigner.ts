/**
 * cosignature/v1 (c2sp.org/tlog-cosignature v1.0.1) with node:crypto: a witness's key, its cosignatures,
 * and checking them. The key file is Go's format with the cosignature type, `PRIVATE+KEY+<name>+<hex
 * id>+<base64(0x04 ‖ seed)>`, which transparency-dev's `NewSignerForCosignatureV1` reads too.
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import { isKeyName, NoteError, signatureLine } from './formats';
import { parsePrivateKeyOf, privateKeyTextOf } from './note';
import { ALG_COSIGNATURE_V1, cosignatureTime, cosignedMessage, cosignerKeyIdInput, cosignerKeyText, type NoteSignature, parseCosignerKeyText, type Policy, splitNote } from './witnessFormats';

const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface CosignerVerifier {
  name: string;
  id: number;
  publicKey: Buffer;
  /** `<name>+<hex id>+<base64(0x04 ‖ public key)>`. */
  text: string;
  key: KeyObject;
}

export interface Cosigner extends CosignerVerifier {
  privateKey: KeyObject;
}

function cosignerKeyId(name: string, publicKey: Uint8Array): number {
  return createHash('sha256').update(cosignerKeyIdInput(name, publicKey)).digest().readUInt32BE(0);
}

function verifierOf(name: string, publicKey: Buffer): CosignerVerifier {
  if (!isKeyName(name)) throw new NoteError(`invalid key name: ${JSON.stringify(name)}`);
  const id = cosignerKeyId(name, publicKey);
  const key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
  return { name, id, publicKey, text: cosignerKeyText(name, id, publicKey), key };
}

export function cosignerFromSeed(name: string, seed: Uint8Array): Cosigner {
  if (seed.length !== 32) throw new NoteError('an Ed25519 seed is 32 bytes');
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  const publicKey = Buffer.from(createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length));
  return { ...verifierOf(name, publicKey), privateKey };
}

/** Go's private key string of a cosigner: `PRIVATE+KEY+<name>+<hex id>+<base64(0x04 ‖ seed)>`. */
export function cosignerKeyFileText(name: string, seed: Uint8Array): string {
  return privateKeyTextOf(ALG_COSIGNATURE_V1, name, cosignerFromSeed(name, seed).id, seed);
}

/** The cosigner in Go's private key string (type 0x04). */
export function parseCosignerKeyFile(text: string): Cosigner {
  return parsePrivateKeyOf(ALG_COSIGNATURE_V1, 'not an Ed25519 cosignature/v1 private key (type 0x04)', text, cosignerFromSeed);
}

export function parseCosignerVerifier(text: string): CosignerVerifier {
  const parts = parseCosignerKeyText(text);
  const verifier = verifierOf(parts.name, Buffer.from(parts.publicKey));
  if (verifier.id !== parts.id) throw new NoteError('the verifier key does not match its key id');
  return verifier;
}

/** The signature line of a cosignature on `body` (a checkpoint's text) at `timestamp` (Unix seconds). */
export function cosign(body: string, cosigner: Cosigner, timestamp: number): string {
  const signature = sign(null, Buffer.from(cosignedMessage(body, timestamp), 'utf8'), cosigner.privateKey);
  const bytes = Buffer.alloc(8 + signature.length);
  bytes.writeBigUInt64BE(BigInt(timestamp));
  signature.copy(bytes, 8);
  return signatureLine(cosigner.name, cosigner.id, bytes);
}

/** The timestamp of `signature` when it is `verifier`'s valid cosignature on `body`; null otherwise. */
export function verifyCosignature(body: string, signature: NoteSignature, verifier: CosignerVerifier): number | null {
  if (signature.name !== verifier.name || signature.id !== verifier.id) return null;
  const time = cosignatureTime(signature.signature);
  if (time === null) return null;
  return verify(null, Buffer.from(cosignedMessage(body, time), 'utf8'), verifier.key, signature.signature.subarray(8)) ? time : null;
}

/** The names of the policy's witnesses whose cosignatures on `note` verify. */
export function cosignersOf(note: string, policy: Policy): string[] {
  const { text, signatures } = splitNote(note);
  return policy.witnesses.filter((w) => signatures.some((s) => verifyCosignature(text, s, parseCosignerVerifier(w.keyText)) !== null)).map((w) => w.name);
}
