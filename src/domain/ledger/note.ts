/**
 * C2SP signed notes (c2sp.org/signed-note v1.0.0) with Ed25519, and the tlog checkpoints they carry
 * (c2sp.org/tlog-checkpoint v1.0.0): the formats Go's `golang.org/x/mod/sumdb/note` and
 * `transparency-dev/formats/log` read, byte for byte. Node's crypto does the Ed25519.
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';

const ALG_ED25519 = 0x01;
/** PKCS #8 and SPKI DER prefixes of a raw 32-byte Ed25519 seed and public key (RFC 8410). */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const DASH = '\u2014';

export class NoteError extends Error {
  override readonly name = 'NoteError';
}

/** A key name: non-empty, no space, no `+`, printable. */
export function isKeyName(name: string): boolean {
  return /^[\x21-\x2a\x2c-\x7e]+$/.test(name);
}

/** First 4 bytes of SHA-256(name ‖ "\n" ‖ 0x01 ‖ public key), big-endian. */
export function keyId(name: string, publicKey: Uint8Array): number {
  return createHash('sha256').update(`${name}\n`).update(Buffer.of(ALG_ED25519)).update(publicKey).digest().readUInt32BE(0);
}

const hex8 = (id: number) => id.toString(16).padStart(8, '0');

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
  return { name, id, publicKey, text: `${name}+${hex8(id)}+${Buffer.concat([Buffer.of(ALG_ED25519), publicKey]).toString('base64')}` };
}

/** A signer from a 32-byte Ed25519 seed. */
export function signerFromSeed(name: string, seed: Uint8Array): Signer {
  if (seed.length !== 32) throw new NoteError('an Ed25519 seed is 32 bytes');
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  const publicKey = createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
  return { ...verifierOf(name, Buffer.from(publicKey)), privateKey };
}

/** Go's private key string: `PRIVATE+KEY+<name>+<hex id>+<base64(0x01 ‖ seed)>`. */
export function privateKeyText(name: string, seed: Uint8Array): string {
  const signer = signerFromSeed(name, seed);
  return `PRIVATE+KEY+${name}+${hex8(signer.id)}+${Buffer.concat([Buffer.of(ALG_ED25519), seed]).toString('base64')}`;
}

export function parsePrivateKey(text: string): Signer {
  // The base64 key may itself hold `+`: it is everything after the fourth.
  const match = /^PRIVATE\+KEY\+([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(text.trim());
  if (!match) throw new NoteError('not a private key of the form PRIVATE+KEY+<name>+<id>+<key>');
  const [, name, id, key] = match as unknown as [string, string, string, string];
  const raw = Buffer.from(key, 'base64');
  if (raw.length !== 33 || raw[0] !== ALG_ED25519) throw new NoteError('not an Ed25519 private key');
  const signer = signerFromSeed(name, raw.subarray(1));
  if (hex8(signer.id) !== id) throw new NoteError('the private key does not match its key id');
  return signer;
}

export function parseVerifierKey(text: string): Verifier {
  const match = /^([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(text.trim());
  if (!match) throw new NoteError('not a verifier key of the form <name>+<8 hex digits>+<base64 key>');
  const [, name, id, key] = match as unknown as [string, string, string, string];
  const raw = Buffer.from(key, 'base64');
  if (raw.length !== 33 || raw[0] !== ALG_ED25519 || raw.toString('base64') !== key) throw new NoteError('not an Ed25519 verifier key');
  const verifier = verifierOf(name, raw.subarray(1));
  if (hex8(verifier.id) !== id) throw new NoteError('the verifier key does not match its key id');
  return verifier;
}

/** Signs `text` (which ends in a newline): the note is the text, a blank line and the signature line. */
export function signNote(text: string, signer: Signer): string {
  if (!text.endsWith('\n') || text.includes('\n\n')) throw new NoteError('a note text ends in one newline and has no blank line');
  const signature = sign(null, Buffer.from(text, 'utf8'), signer.privateKey);
  const id = Buffer.alloc(4);
  id.writeUInt32BE(signer.id);
  return `${text}\n${DASH} ${signer.name} ${Buffer.concat([id, signature]).toString('base64')}\n`;
}

/**
 * The text of a note, once a signature by `verifier` checks out. Signatures by other keys (witnesses'
 * cosignatures, say) are ignored, as the spec says; a bad signature by the known key fails.
 */
export function openNote(note: string, verifier: Verifier): string {
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) throw new NoteError('not a signed note');
  const text = note.slice(0, split + 1);
  let verified = false;
  for (const line of note.slice(split + 2, -1).split('\n')) {
    const match = new RegExp(`^${DASH} (\\S+) ([A-Za-z0-9+/=]+)$`).exec(line);
    if (!match) throw new NoteError(`malformed signature line: ${JSON.stringify(line)}`);
    const raw = Buffer.from(match[2] as string, 'base64');
    if (match[1] !== verifier.name || raw.length < 4 || raw.readUInt32BE(0) !== verifier.id) continue;
    const publicKey = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, verifier.publicKey]), format: 'der', type: 'spki' });
    if (raw.length !== 68 || !verify(null, Buffer.from(text, 'utf8'), publicKey, raw.subarray(4))) {
      throw new NoteError(`the signature by ${verifier.name} does not verify`);
    }
    verified = true;
  }
  if (!verified) throw new NoteError(`no signature by ${verifier.name}`);
  return text;
}

export interface Checkpoint {
  origin: string;
  size: number;
  root: Buffer;
}

export function checkpointText(checkpoint: Checkpoint): string {
  return `${checkpoint.origin}\n${checkpoint.size}\n${checkpoint.root.toString('base64')}\n`;
}

/** The checkpoint in a note's text (as returned by `openNote`). */
export function parseCheckpoint(text: string): Checkpoint {
  const lines = text.split('\n');
  const [origin, size, root] = lines;
  if (lines.length < 4 || !origin || !size || !/^(0|[1-9][0-9]*)$/.test(size) || !root) throw new NoteError('not a checkpoint');
  const hash = Buffer.from(root, 'base64');
  if (hash.length !== 32 || hash.toString('base64') !== root) throw new NoteError('a checkpoint root is 32 bytes of standard base64');
  return { origin, size: Number(size), root: hash };
}
