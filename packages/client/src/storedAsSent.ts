/**
 * Whether the service stored an event as the application sent it: the write's answer is what the
 * receipt (and `verifyReceipts`) proves, so an answer that changed a field would otherwise be proven
 * as if the application had said it. Every field the application gave is compared with the stored
 * event, with the service's defaults for what it left out (names null, metadata {}), and the timestamp
 * as an instant. The producer signature must be exactly the one sent (none when none was): the ledger
 * hashes it with the event, and a receipt for an event signed otherwise would prove a signature the
 * application never made.
 */
import { canonicalJson } from '../../../src/domain/ledger/formats.ts';
import type { EventInput, RemovedEvent, StoredEvent } from './types.ts';

/** The fields that differ, named as the API names them; empty when the event was stored as sent. */
export function differencesFromSent(sent: EventInput, stored: StoredEvent | RemovedEvent): string[] {
  // A replay's answer for an event removed since has no content left to compare.
  if ('removed' in stored) return [];
  const expected: [keyof StoredEvent, unknown][] = [
    ['actor_id', sent.actor.id],
    ['actor_name', sent.actor.name ?? null],
    ['actor_email', sent.actor.email ?? null],
    ['action', sent.action],
    ['resource_type', sent.resource.type],
    ['resource_id', sent.resource.id],
    ['resource_name', sent.resource.name ?? null],
  ];
  const differs = expected.filter(([field, value]) => stored[field] !== value).map(([field]) => field as string);
  if (canonicalJson(stored.metadata) !== canonicalJson(sent.metadata ?? {})) differs.push('metadata');
  if (sent.organization_id != null && stored.organization_id !== sent.organization_id) differs.push('organization_id');
  if (sent.timestamp != null && Date.parse(stored.timestamp) !== Date.parse(sent.timestamp)) differs.push('timestamp');
  if ((stored.producer_signature ?? null) !== (sent.producer_signature ?? null)) differs.push('producer_signature');
  return differs;
}
