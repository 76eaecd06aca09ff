/**
 * C2SP signed notes (c2sp.org/signed-note v1.0.0) with Ed25519, and the tlog checkpoints they carry
 * (c2sp.org/tlog-checkpoint v1.0.0): the formats Go's `golang.org/x/mod/sumdb/note` and
 * `transparency-dev/formats/log` read, byte for byte: their text is `formats.ts`'s; Node's crypto
 * does the Ed25519 here.
 */
import { createHash, createPrivateKey, createPublicKey, hkdfSync, type KeyObject, sign, verify } from 'node:crypto';
import { ALG_ED25519, hex8, isKeyName, keyIdInput, NoteError, parseVerifierKeyText, signatureLine, signaturesBy, verifierKeyText } from './formats';

/** PKCS #8 and SPKI DER prefixes of a raw 32-byte Ed25519 seed and public key (RFC 8410). */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** First 4 bytes of SHA-256(name ‖ "\n" ‖ 0x01 ‖ public key), big-endian. */
export function keyId(name: string, publicKey: Uint8Array): number {
  return createHash('sha256').update(keyIdInput(name, publicKey)).digest().readUInt32BE(0);
}

export interface Verifier {
  name: string;
  id: number;
  publicKey: Buffer;
  /** `<name>+<hex id>+<base64(0x01 ‖ public key)>`. */
  text: string;
}

export interface Signer extends Verifier {
  privateKey: KeyObject;
}

function verifierOf(name: string, publicKey: Buffer): Verifier {
  if (!isKeyName(name)) throw new NoteError(`invalid key name: ${JSON.stringify(name)}`);
  const id = keyId(name, publicKey);
  return { name, id, publicKey, text: verifierKeyText(name, id, publicKey) };
}

/** A signer from a 32-byte Ed25519 seed. */
export function signerFromSeed(name: string, seed: Uint8Array): Signer {
  if (seed.length !== 32) throw new NoteError('an Ed25519 seed is 32 bytes');
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  const publicKey = createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
  return { ...verifierOf(name, Buffer.from(publicKey)), privateKey };
}

/**
 * A 32-byte key for one `purpose`, derived (HKDF-SHA256) from the signing key: a secret every instance
 * of an installation holds (they share the key file) and the database never does. Each purpose gets a
 * key of its own, so none can stand in for another or for the signing key.
 */
export function keyDerivedFrom(signer: Signer, purpose: string): Buffer {
  const secret = signer.privateKey.export({ format: 'der', type: 'pkcs8' });
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), purpose, 32));
}

/** Go's private key string for a key of type `alg`: `PRIVATE+KEY+<name>+<hex id>+<base64(alg ‖ seed)>`. */
export function privateKeyTextOf(alg: number, name: string, id: number, seed: Uint8Array): string {
  return `PRIVATE+KEY+${name}+${hex8(id)}+${Buffer.concat([Buffer.of(alg), seed]).toString('base64')}`;
}

/**
 * Go's private key string of type `alg` as the key `fromSeed` makes of its name and seed, once its id
 * matches; `wrongType` is the error when the key is not 33 bytes of that type. The note signer and the
 * cosigner read the same format and differ in `alg` only.
 */
export function parsePrivateKeyOf<K extends { id: number }>(alg: number, wrongType: string, text: string, fromSeed: (name: string, seed: Uint8Array) => K): K {
  // The base64 key may itself hold `+`: it is everything after the fourth.
  const match = /^PRIVATE\+KEY\+([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(text.trim());
  if (!match) throw new NoteError('not a private key of the form PRIVATE+KEY+<name>+<id>+<key>');
  const [, name, id, key] = match as unknown as [string, string, string, string];
  const raw = Buffer.from(key, 'base64');
  if (raw.length !== 33 || raw[0] !== alg) throw new NoteError(wrongType);
  const signer = fromSeed(name, raw.subarray(1));
  if (hex8(signer.id) !== id) throw new NoteError('the private key does not match its key id');
  return signer;
}

/** Go's private key string: `PRIVATE+KEY+<name>+<hex id>+<base64(0x01 ‖ seed)>`. */
export function privateKeyText(name: string, seed: Uint8Array): string {
  return privateKeyTextOf(ALG_ED25519, name, signerFromSeed(name, seed).id, seed);
}

/** The note signer in Go's private key string (type 0x01). */
export function parsePrivateKey(text: string): Signer {
  return parsePrivateKeyOf(ALG_ED25519, 'not an Ed25519 private key', text, signerFromSeed);
}

export function parseVerifierKey(text: string): Verifier {
  const parts = parseVerifierKeyText(text);
  const verifier = verifierOf(parts.name, Buffer.from(parts.publicKey));
  if (verifier.id !== parts.id) throw new NoteError('the verifier key does not match its key id');
  return verifier;
}

/** Signs `text` (which ends in a newline): the note is the text, a blank line and the signature line. */
export function signNote(text: string, signer: Signer): string {
  if (!text.endsWith('\n') || text.includes('\n\n')) throw new NoteError('a note text ends in one newline and has no blank line');
  const signature = sign(null, Buffer.from(text, 'utf8'), signer.privateKey);
  return `${text}\n${signatureLine(signer.name, signer.id, signature)}`;
}

/**
 * The text of a note, once a signature by `verifier` checks out. Signatures by other keys (witnesses'
 * cosignatures, say) are ignored, as the spec says; a bad signature by the known key fails.
 */
export function openNote(note: string, verifier: Verifier): string {
  const { text, signatures } = signaturesBy(note, verifier);
  const publicKey = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, verifier.publicKey]), format: 'der', type: 'spki' });
  for (const signature of signatures) {
    if (!verify(null, Buffer.from(text, 'utf8'), publicKey, signature)) throw new NoteError(`the signature by ${verifier.name} does not verify`);
  }
  return text;
}
