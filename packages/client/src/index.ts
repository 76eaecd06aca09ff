/** `@audit-ledger/client`: the REST API, typed, and a delivery queue that never loses or doubles an event. */
export { type BackoffOptions, retryDelayMs } from './backoff.ts';
export { AuditLedgerError, type ErrorBody, NetworkError, QueueClosedError, QueueFullError } from './errors.ts';
export { DeliveryQueue, type QueueOptions } from './queue.ts';
export { AuditLedgerClient, type Checkpoint, type ClientOptions, type EventPage, type InclusionProof, type WriteOptions } from './rest.ts';
export type { EventFilters, EventInput, LedgerReceipt, Recorded, RemovedEvent, RemovedReceipt, StoredEvent } from './types.ts';
