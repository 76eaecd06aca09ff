/**
 * The ledger's formats as text, without crypto: RFC 8785 canonical JSON, leaves, C2SP signed notes
 * (c2sp.org/signed-note), verifier keys and tlog checkpoints (c2sp.org/tlog-checkpoint). One parser
 * for the server and the CLI (which hash and verify with node:crypto: `eventHash.ts`, `note.ts`) and
 * the dashboard (WebCrypto), so the browser checks exactly what the server writes.
 */
import canonicalize from 'canonicalize';
import { EVENT_FIELDS, type EventField, leftOut } from '../eventFields';

/**
 * Leaf versions. v1 commits to the event's plain SHA-256 (events written before retention existed); v2
 * to a salted commitment (`commitmentInput`), so that once an event's body and salt are deleted its
 * leaf, which stays, cannot be used to confirm a guess of its content.
 */
export type LeafVersion = 1 | 2;
/** The domain prefix of a v2 commitment: SHA-256(prefix ‖ salt ‖ JCS(event)). */
export const COMMITMENT_PREFIX = 'audit-ledger/event/v2\n';
/** A v2 salt's length: 32 random bytes, written as 64 lowercase hex digits. */
export const SALT_BYTES = 32;

/** What a leaf commits to: the event's hash (v1) or its salted commitment (v2), lowercase hex. */
export interface LeafCommit {
  v: LeafVersion;
  hash: string;
}
export const ALG_ED25519 = 0x01;
const DASH = '\u2014';

export class NoteError extends Error {
  override readonly name = 'NoteError';
}

/** Standard padded base64 (what every format here uses). */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** The bytes of standard padded base64 in its one canonical spelling, or null. */
export function fromBase64(text: string): Uint8Array | null {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  return toBase64(bytes) === text ? bytes : null;
}

/** RFC 8785 canonical JSON. Throws for what JCS cannot represent (unpaired surrogates, non-finite numbers). */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('this value has no JSON form');
  return text;
}

/** The event's fields in RFC 8785's order: by name, compared as UTF-16 code units (JavaScript's own string order). */
const CANONICAL_ORDER = [...(EVENT_FIELDS as readonly EventField[])].sort((a, b) => (a.api < b.api ? -1 : a.api > b.api ? 1 : 0));

/**
 * The text the ledger hashes for an event: the RFC 8785 canonical JSON of the event exactly as
 * `GET /v1/events/:id` returns it. `fields`: the event's fields by API name, json ones as JSON text
 * (`hashInputOfStored`, `hashInputOfEvent`). The keys' canonical order is fixed, so it is written out
 * from the field table and only json fields go through the canonicalizer (none at all when empty): on
 * the ingest path of every event. A test holds it equal to `canonicalJson(event)` for every kind of metadata.
 */
export function canonicalEventText(fields: Readonly<Record<string, unknown>>): string {
  let text = '';
  for (const field of CANONICAL_ORDER) {
    const value = fields[field.api];
    if (leftOut(field, value)) continue;
    const json = field.kind === 'json' ? (value === '{}' ? '{}' : canonicalJson(JSON.parse(value as string))) : JSON.stringify(value ?? null);
    text += `${text ? ',' : '{'}"${field.api}":${json}`;
  }
  return `${text}}`;
}

/**
 * The leaf of the event at `seq` (leaf index seq − 1) in organization `org`'s log: the canonical JSON
 * of `{event_sha256, org, seq, v: 1}` or `{event_commitment, org, seq, v: 2}`, written out (keys in
 * canonical order; JSON.stringify is RFC 8785's serialization of a well-formed string, which the
 * organization's id is; a test holds it equal).
 */
export function leafJson(org: string, seq: number, commit: LeafCommit): string {
  const field = commit.v === 1 ? 'event_sha256' : 'event_commitment';
  return `{"${field}":"${commit.hash}","org":${JSON.stringify(org)},"seq":${seq},"v":${commit.v}}`;
}

/** The bytes a v2 commitment hashes: the domain prefix, the salt's 32 bytes, the event's canonical JSON. */
export function commitmentInput(salt: Uint8Array, canonicalText: string): Uint8Array {
  const prefix = new TextEncoder().encode(COMMITMENT_PREFIX);
  const text = new TextEncoder().encode(canonicalText);
  const input = new Uint8Array(prefix.length + salt.length + text.length);
  input.set(prefix);
  input.set(salt, prefix.length);
  input.set(text, prefix.length + salt.length);
  return input;
}

const SALT_PATTERN = /^[0-9a-f]{64}$/;

/** Whether `salt` is one as the API writes it: 64 lowercase hex digits. */
export function isSalt(salt: string): boolean {
  return SALT_PATTERN.test(salt);
}

/** A salt as the API writes it (64 lowercase hex digits) as bytes, or null. */
export function saltBytes(salt: string): Uint8Array | null {
  if (!isSalt(salt)) return null;
  return Uint8Array.from(salt.match(/../g) as string[], (pair) => parseInt(pair, 16));
}

/** A key name: non-empty, no space, no `+`, printable. */
export function isKeyName(name: string): boolean {
  return /^[\x21-\x2a\x2c-\x7e]+$/.test(name);
}

/**
 * What the id of a key of type `alg` hashes: name ‖ "\n" ‖ alg ‖ public key (the id is its SHA-256's
 * first 4 bytes, big-endian). The note signer (0x01) and the cosigner (0x04) keys differ only in `alg`.
 */
export function keyIdInputOf(alg: number, name: string, publicKey: Uint8Array): Uint8Array {
  const head = new TextEncoder().encode(`${name}\n`);
  const input = new Uint8Array(head.length + 1 + publicKey.length);
  input.set(head);
  input[head.length] = alg;
  input.set(publicKey, head.length + 1);
  return input;
}

/** What a note signer's key id hashes: name ‖ "\n" ‖ 0x01 ‖ public key. */
export function keyIdInput(name: string, publicKey: Uint8Array): Uint8Array {
  return keyIdInputOf(ALG_ED25519, name, publicKey);
}

export const hex8 = (id: number) => id.toString(16).padStart(8, '0');

/** A verifier key of type `alg`: `<name>+<hex id>+<base64(alg ‖ public key)>`. */
export function keyTextOf(alg: number, name: string, id: number, publicKey: Uint8Array): string {
  return `${name}+${hex8(id)}+${toBase64(Uint8Array.of(alg, ...publicKey))}`;
}

/** `<name>+<hex id>+<base64(0x01 ‖ public key)>`. */
export function verifierKeyText(name: string, id: number, publicKey: Uint8Array): string {
  return keyTextOf(ALG_ED25519, name, id, publicKey);
}

export interface VerifierKeyParts {
  name: string;
  /** As the text claims it: the caller checks it against the hash of `keyIdInputOf`. */
  id: number;
  publicKey: Uint8Array;
}

/** A verifier key `<name>+<hex id>+<base64(alg ‖ public key)>` of type `alg`; `wrongType` is the error when the type or length is not. */
export function parseKeyTextOf(alg: number, wrongType: string, text: string): VerifierKeyParts {
  const match = /^([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(text.trim());
  if (!match) throw new NoteError('not a verifier key of the form <name>+<8 hex digits>+<base64 key>');
  const [, name, id, key] = match as unknown as [string, string, string, string];
  const raw = fromBase64(key);
  if (!raw || raw.length !== 33 || raw[0] !== alg) throw new NoteError(wrongType);
  if (!isKeyName(name)) throw new NoteError(`invalid key name: ${JSON.stringify(name)}`);
  return { name, id: parseInt(id, 16), publicKey: raw.subarray(1) };
}

/** A note signer's verifier key `<name>+<hex id>+<base64(0x01 ‖ public key)>`. */
export function parseVerifierKeyText(text: string): VerifierKeyParts {
  return parseKeyTextOf(ALG_ED25519, 'not an Ed25519 verifier key', text);
}

/** The signature line of `text` signed by key `name` with id `id`. */
export function signatureLine(name: string, id: number, signature: Uint8Array): string {
  const bytes = new Uint8Array(4 + signature.length);
  new DataView(bytes.buffer).setUint32(0, id);
  bytes.set(signature, 4);
  return `${DASH} ${name} ${toBase64(bytes)}\n`;
}

/**
 * A signed note's text (ending in a newline) and the signatures in it by the key of this name and id;
 * signatures by other keys (witnesses' cosignatures, say) are skipped, as the spec says. Throws when
 * the note is malformed or holds no signature by that key; the caller verifies the ones returned.
 */
export function signaturesBy(note: string, key: { name: string; id: number }): { text: string; signatures: Uint8Array[] } {
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) throw new NoteError('not a signed note');
  const text = note.slice(0, split + 1);
  const signatures: Uint8Array[] = [];
  for (const line of note.slice(split + 2, -1).split('\n')) {
    const match = new RegExp(`^${DASH} (\\S+) (\\S+)$`).exec(line);
    const raw = match ? fromBase64(match[2] as string) : null;
    if (!match || !raw || raw.length < 5) throw new NoteError(`malformed signature line: ${JSON.stringify(line)}`);
    if (match[1] !== key.name || new DataView(raw.buffer, raw.byteOffset).getUint32(0) !== key.id) continue;
    if (raw.length !== 68) throw new NoteError(`the signature by ${key.name} is not an Ed25519 signature`);
    signatures.push(raw.subarray(4));
  }
  if (signatures.length === 0) throw new NoteError(`no signature by ${key.name}`);
  return { text, signatures };
}

export interface Checkpoint {
  origin: string;
  size: number;
  root: Uint8Array;
}

export function checkpointText(checkpoint: Checkpoint): string {
  return `${checkpoint.origin}\n${checkpoint.size}\n${toBase64(checkpoint.root)}\n`;
}

/** The checkpoint in a note's text (once its signature checked out). */
export function parseCheckpoint(text: string): Checkpoint {
  const lines = text.split('\n');
  const [origin, size, root] = lines;
  if (lines.length < 4 || !origin || !size || !/^(0|[1-9][0-9]{0,14})$/.test(size) || !root) throw new NoteError('not a checkpoint');
  const hash = fromBase64(root);
  if (!hash || hash.length !== 32) throw new NoteError('a checkpoint root is 32 bytes of standard base64');
  return { origin, size: Number(size), root: hash };
}
