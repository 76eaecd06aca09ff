/**
 * What the ledger commits to for each event (node:crypto; the dashboard hashes the same text with
 * WebCrypto): the SHA-256 of the event's canonical JSON (`canonicalEventText`), the salted commitment
 * of v2 leaves, and the leaf that binds one of them to the organization and the event's place.
 */
import { hash, randomFillSync } from 'node:crypto';
import { canonicalEventText, COMMITMENT_PREFIX, isSalt, type LeafCommit, leafJson, SALT_BYTES } from './formats';
import { leafHash } from './merkle';

/** Lowercase hex SHA-256 of the event's canonical JSON; `fields` as `canonicalEventText` takes them. */
export function eventSha256(fields: Readonly<Record<string, unknown>>): string {
  return hash('sha256', canonicalEventText(fields), 'hex');
}

const PREFIX = Buffer.from(COMMITMENT_PREFIX, 'utf8');

/** Random bytes for salts, drawn from the system's CSPRNG 128 salts at a time: one call per salt cost as much as hashing the event. */
const SALT_POOL = Buffer.alloc(SALT_BYTES * 128);
let saltPoolAt = SALT_POOL.length;

/** A new event's salt: 32 random bytes as hex. Each pooled byte is handed out once. */
export function newSalt(): string {
  if (saltPoolAt === SALT_POOL.length) {
    randomFillSync(SALT_POOL);
    saltPoolAt = 0;
  }
  saltPoolAt += SALT_BYTES;
  return SALT_POOL.toString('hex', saltPoolAt - SALT_BYTES, saltPoolAt);
}

/** What a receipt says of an event: its plain hash, and for a v2 leaf the commitment and the salt. */
export interface EventHashes {
  event_sha256: string;
  event_commitment?: string;
  salt?: string;
}

/** The event's hashes, from one canonical text: a salt makes its leaf a v2 leaf. Throws on a malformed salt. */
export function eventHashes(fields: Readonly<Record<string, unknown>>, salt: string | undefined): EventHashes {
  return eventHashesOfText(canonicalEventText(fields), salt);
}

/** `eventHashes` of the event whose canonical text (`canonicalEventText`) is `text`. */
export function eventHashesOfText(text: string, salt: string | undefined): EventHashes {
  const sha = hash('sha256', text, 'hex');
  if (salt === undefined) return { event_sha256: sha };
  if (!isSalt(salt)) throw new TypeError('a salt is 64 lowercase hex digits');
  // commitmentInput's bytes (formats.ts), made with Buffers; hashed in one call (a Hash object costs more than the hashing).
  const commitment = hash('sha256', Buffer.concat([PREFIX, Buffer.from(salt, 'hex'), Buffer.from(text, 'utf8')]), 'hex');
  return { event_sha256: sha, event_commitment: commitment, salt };
}

/** The v2 commitment of an event's fields under `salt` (what a guess of a pruned event would have to match). */
export function eventCommitment(fields: Readonly<Record<string, unknown>>, salt: string): string {
  return eventHashes(fields, salt).event_commitment as string;
}

/** What the leaf of an event with these hashes commits to. */
export function leafCommitOf(hashes: EventHashes): LeafCommit {
  return hashes.event_commitment === undefined ? { v: 1, hash: hashes.event_sha256 } : { v: 2, hash: hashes.event_commitment };
}

/** The leaf bytes of the event at `seq` in organization `org`'s log (`formats.ts`'s `leafJson`). */
export function leafBytes(org: string, seq: number, commit: LeafCommit): Buffer {
  return Buffer.from(leafJson(org, seq, commit), 'utf8');
}

/** The Merkle leaf hash of the event at `seq` of `org`'s log whose leaf commits to `commit`. */
export function eventLeafHash(org: string, seq: number, commit: LeafCommit): Buffer {
  return leafHash(leafJson(org, seq, commit));
}
