/**
 * The API's shapes as a client sends and receives them (docs/api.md; `/docs` on a running service is the
 * reference of every field). Written here, not imported from the server, so that the package has no
 * dependency on the server's code.
 */

/** The body of `POST /v1/events` (interface.md §4.1). */
export interface EventInput {
  actor: { id: string; name?: string; email?: string };
  action: string;
  resource: { type: string; id: string; name?: string };
  metadata?: Record<string, unknown>;
  organization_id?: string;
  /** ISO 8601; the time the service receives the event when left out. */
  timestamp?: string;
}

/** An event as stored and returned (interface.md §2.1). */
export interface StoredEvent {
  id: string;
  timestamp: string;
  actor_id: string;
  actor_name?: string | null;
  actor_email?: string | null;
  action: string;
  resource_type: string;
  resource_id: string;
  resource_name?: string | null;
  metadata: Record<string, unknown>;
  organization_id: string;
  api_key_id?: string | null;
}

/** Where an event is in its organization's Merkle tree and what its leaf commits to (docs/ledger.md). */
export interface LedgerReceipt {
  seq: number;
  leaf_index: number;
  event_sha256: string;
  event_commitment?: string;
  salt?: string;
}

/**
 * What a replayed write answers for an event removed under retention since it was first stored
 * (docs/api.md, "A replay after a removal"): its id and removal, and the receipt's number.
 */
export interface RemovedEvent {
  id: string;
  removed: 'pruned' | 'erased';
  removed_by: number;
}
export interface RemovedReceipt {
  seq: number;
  leaf_index: number;
  removed: true;
}

/** A stored event with its receipt: what each recorded event resolves with. */
export interface Recorded {
  event: StoredEvent | RemovedEvent;
  receipt: LedgerReceipt | RemovedReceipt;
}

/** The list endpoint's filters (docs/api.md, "List"). */
export interface EventFilters {
  actor_id?: string;
  action?: string;
  resource_type?: string;
  resource_id?: string;
  organization_id?: string;
  start_date?: string;
  end_date?: string;
}
