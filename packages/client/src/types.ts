/**
 * The API's shapes, named: each is the schema of openapi.json as openapi-typescript generates it
 * (`openapi.ts`, rewritten by `npm run openapi:generate` and checked by a test), so the client cannot
 * drift from the service it calls and depends on none of its code.
 */
import type { components, operations } from './openapi.ts';

type Schemas = components['schemas'];

/** The body of `POST /v1/events` (interface.md §4.1). */
export type EventInput = Schemas['CreateEventInput'];
/** An event as stored and returned (interface.md §2.1). */
export type StoredEvent = Schemas['Event'];
/** Where an event is in its organization's Merkle tree and what its leaf commits to (docs/ledger.md). */
export type LedgerReceipt = Schemas['LedgerReceipt'];
/**
 * What a replayed write answers for an event removed under retention since it was first stored
 * (docs/api.md, "A replay after a removal"): its id and removal, and the receipt's number.
 */
export type RemovedEvent = Schemas['RemovedEvent'];
export type RemovedReceipt = Schemas['RemovedReceipt'];
/** A page of the list endpoint. */
export type EventPage = Schemas['EventPage'];
/** The organization's newest signed checkpoint, with its inclusion in the installation log once there is one. */
export type Checkpoint = Schemas['LedgerCheckpoint'];
export type InstallationInclusion = Schemas['InstallationInclusion'];
/** An event's inclusion proof under a signed checkpoint. */
export type InclusionProof = Schemas['InclusionProof'];
export type ConsistencyProof = Schemas['ConsistencyProof'];
/** The inclusion paths of every event an export with the same filters returns, under one checkpoint. */
export type ProofsSidecar = Schemas['ProofsSidecar'];
/** The list endpoint's filters (docs/api.md, "List"). */
export type EventFilters = Omit<NonNullable<operations['events-list']['parameters']['query']>, 'cursor' | 'limit'>;

/** A stored event with its receipt: what each recorded event resolves with. */
export interface Recorded {
  event: StoredEvent | RemovedEvent;
  receipt: LedgerReceipt | RemovedReceipt;
}
