/**
 * What the ledger commits to for each event: the SHA-256 of the RFC 8785 (JCS) canonical JSON of the
 * event exactly as `GET /v1/events/:id` returns it, and the leaf bytes that bind that hash to the
 * organization and the event's place: the JCS of `{"event_sha256","org","seq","v":1}`.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { TEvent } from '../event';

export const LEAF_VERSION = 1;

/** RFC 8785 canonical JSON. Throws for what JCS cannot represent (unpaired surrogates, non-finite numbers). */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('this value has no JSON form');
  return text;
}

/** Lowercase hex SHA-256 of the event's canonical JSON. */
export function eventSha256(event: TEvent): string {
  return createHash('sha256').update(canonicalJson(event), 'utf8').digest('hex');
}

/** The leaf of the event at `seq` (leaf index seq − 1) in organization `org`'s log. */
export function leafBytes(org: string, seq: number, eventHash: string): Buffer {
  return Buffer.from(canonicalJson({ event_sha256: eventHash, org, seq, v: LEAF_VERSION }), 'utf8');
}
