/**
 * What the ledger commits to for each event (node:crypto; the dashboard hashes the same text with
 * WebCrypto): the SHA-256 of the event's canonical JSON (`canonicalEventText`), and the leaf that binds
 * that hash to the organization and the event's place: the JCS of `{"event_sha256","org","seq","v":1}`.
 */
import { hash } from 'node:crypto';
import { canonicalEventText, leafJson } from './formats';
import { leafHash } from './merkle';

/** Lowercase hex SHA-256 of the event's canonical JSON; `fields` as `canonicalEventText` takes them. */
export function eventSha256(fields: Readonly<Record<string, unknown>>): string {
  return hash('sha256', canonicalEventText(fields), 'hex');
}

/** The leaf bytes of the event at `seq` in organization `org`'s log (`formats.ts`'s `leafJson`). */
export function leafBytes(org: string, seq: number, eventHash: string): Buffer {
  return Buffer.from(leafJson(org, seq, eventHash), 'utf8');
}

/** The Merkle leaf hash of the event at `seq` of `org`'s log whose event hash is `eventHash`. */
export function eventLeafHash(org: string, seq: number, eventHash: string): Buffer {
  return leafHash(leafJson(org, seq, eventHash));
}
