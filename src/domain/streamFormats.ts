/**
 * What a stream delivers for each event, in either format. Both carry the event's ledger receipt, so a
 * receiver can check every delivered event against a signed checkpoint of the organization's log.
 *
 * - `json`: `{ "event": <exactly as GET /v1/events/{id} returns it>, "receipt": { seq, leaf_index, event_sha256[, event_commitment, salt] } }`,
 *   written as text once per event for all streams (src/streams/eventSource.ts, `jsonItem`).
 * - `ocsf`: OCSF 1.3.0 API Activity (class 6003), our fields mapped as docs/streams.md's table says, the
 *   original `{ event, receipt }` kept under `unmapped`.
 */
import type { TEvent } from './eventFields';
import type { TLedgerReceipt } from './ledger/receipt';

/** The write's receipt (domain/ledger/receipt.ts): with the salt and commitment for v2 leaves. */
export type Receipt = TLedgerReceipt;

/** One delivered event: the JSON format's item, and what the OCSF one maps from. */
export interface StreamItem {
  event: TEvent;
  receipt: Receipt;
}

export const OCSF_VERSION = '1.3.0';

/** OCSF API Activity's activity ids, from the action's last word (`invoice.created` → Create). */
const ACTIVITIES: readonly [RegExp, number, string][] = [
  [/(^|[._:-])(create|created|add|added|insert|inserted|invite|invited|register|registered)$/i, 1, 'Create'],
  [/(^|[._:-])(read|viewed|view|get|list|listed|export|exported|download|downloaded|access|accessed)$/i, 2, 'Read'],
  [/(^|[._:-])(update|updated|change|changed|edit|edited|modify|modified|rename|renamed|set)$/i, 3, 'Update'],
  [/(^|[._:-])(delete|deleted|remove|removed|revoke|revoked|destroy|destroyed|purge|purged)$/i, 4, 'Delete'],
];

export function ocsfActivity(action: string): { id: number; name: string } {
  for (const [pattern, id, name] of ACTIVITIES) if (pattern.test(action)) return { id, name };
  return { id: 99, name: 'Other' };
}

/** The OCSF form of one event. Absent optional fields are left out, as OCSF asks. */
export function toOcsf(item: StreamItem, tenant: string, loggedAt: Date): Record<string, unknown> {
  const { event } = item;
  const activity = ocsfActivity(event.action);
  const time = Date.parse(event.timestamp);
  const user: Record<string, unknown> = { uid: event.actor_id };
  if (event.actor_name !== null) user.name = event.actor_name;
  if (event.actor_email !== null) user.email_addr = event.actor_email;
  const resource: Record<string, unknown> = { type: event.resource_type, uid: event.resource_id };
  if (event.resource_name !== null) resource.name = event.resource_name;
  return {
    activity_id: activity.id,
    activity_name: activity.name,
    category_uid: 6,
    category_name: 'Application Activity',
    class_uid: 6003,
    class_name: 'API Activity',
    type_uid: 6003 * 100 + activity.id,
    type_name: `API Activity: ${activity.name}`,
    severity_id: 1,
    severity: 'Informational',
    time,
    metadata: {
      version: OCSF_VERSION,
      uid: event.id,
      original_time: event.timestamp,
      logged_time: loggedAt.getTime(),
      tenant_uid: tenant,
      product: { name: 'Audit Ledger', vendor_name: 'Audit Ledger' },
    },
    actor: { user },
    api: { operation: event.action },
    resources: [resource],
    // The calling application, known to the service by the API key it used.
    src_endpoint: { uid: event.api_key_id },
    unmapped: { event, receipt: item.receipt },
  };
}
