/** `@audit-ledger/client`: the REST API, typed; a delivery queue that never loses or doubles an event; events signed by their producer; receipts verified here. */
export { type BackoffOptions, retryDelayMs } from './backoff.ts';
export { AuditLedgerError, type ErrorBody, NetworkError, QueueClosedError, QueueFullError } from './errors.ts';
export { generateProducerKey, type ProducerKeyPair, type ProducerSigner, producerSigner, type ProducerSignerOptions, type WebCryptoKey } from './producer.ts';
export { DeliveryQueue, type QueueOptions } from './queue.ts';
export { AuditLedgerClient, type ClientOptions, type WriteOptions } from './rest.ts';
export type { Checkpoint, ConsistencyProof, EventFilters, EventInput, EventPage, InclusionProof, InstallationInclusion, LedgerReceipt, ProofsSidecar, Recorded, RemovedEvent, RemovedReceipt, StoredEvent } from './types.ts';
export { type ProofSource, ReceiptVerifier, type SeenCheckpoint, type SeenStore, VerificationError, type VerifiedReceipts, type VerifyOptions } from './verify.ts';
export type { components, operations, paths } from './openapi.ts';
