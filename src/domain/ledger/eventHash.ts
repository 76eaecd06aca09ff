/**
 * What the ledger commits to for each event: the SHA-256 of the RFC 8785 (JCS) canonical JSON of the
 * event exactly as `GET /v1/events/:id` returns it, and the leaf bytes that bind that hash to the
 * organization and the event's place: the JCS of `{"event_sha256","org","seq","v":1}`.
 */
import { hash } from 'node:crypto';
import type { TEvent } from '../event';
import { canonicalJson, leafJson } from './formats';

/** Lowercase hex SHA-256 of the event's canonical JSON. */
export function eventSha256(event: TEvent): string {
  return hash('sha256', canonicalJson(event), 'hex');
}

/**
 * The same hash for a stored event, without building its API object: the twelve keys are fixed, so
 * their canonical order is written out here, and only the metadata goes through the canonicalizer (none
 * at all when it is empty). On the ingest path of every event; a test holds it equal to `eventSha256`.
 */
export function eventSha256OfParts(event: Omit<TEvent, 'metadata'>, metadataJson: string): string {
  const s = JSON.stringify;
  const metadata = metadataJson === '{}' ? '{}' : canonicalJson(JSON.parse(metadataJson));
  const text =
    `{"action":${s(event.action)},"actor_email":${s(event.actor_email)},"actor_id":${s(event.actor_id)},` +
    `"actor_name":${s(event.actor_name)},"api_key_id":${s(event.api_key_id)},"id":${s(event.id)},"metadata":${metadata},` +
    `"organization_id":${s(event.organization_id)},"resource_id":${s(event.resource_id)},"resource_name":${s(event.resource_name)},` +
    `"resource_type":${s(event.resource_type)},"timestamp":${s(event.timestamp)}}`;
  return hash('sha256', text, 'hex');
}

/** The leaf bytes of the event at `seq` in organization `org`'s log (`formats.ts`'s `leafJson`). */
export function leafBytes(org: string, seq: number, eventHash: string): Buffer {
  return Buffer.from(leafJson(org, seq, eventHash), 'utf8');
}
