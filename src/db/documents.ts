/** Stored document shapes and the mapping from a stored event to its API form. */
import type { StreamDestination, StreamFormat } from '../domain/stream';
import { Binary } from 'mongodb';
import type { Plan } from '../domain/plan';
import type { Scope } from '../domain/apiKey';
import type { Role } from '../domain/roles';
import type { AuditActor, AuditResource, SelfAuditAction } from '../domain/selfAudit';
import { canonicalTextOfStored, toApiEvent, toApiEventJson } from '../domain/compiledFields';
import type { StoredEventFields, TEvent } from '../domain/eventFields';
import { type EventHashes, eventHashesOfText, leafCommitOf } from '../domain/ledger/eventHash';
import type { LeafCommit } from '../domain/ledger/formats';
import type { THoldFilter } from '../domain/retention';

/**
 * A stored event: the table's fields (src/domain/eventFields.ts; `_id` is the event id, a UUIDv7 as text,
 * which sorts by creation time and compares the same on MongoDB and FerretDB; metadata is JSON text,
 * since FerretDB rejects keys with `.` or a leading `$` and nested arrays, and MongoDB restricts such keys
 * too) and what the service keeps beside them.
 */
export interface EventDoc extends StoredEventFields {
  /** The organization that owns the event: always the API key's, whatever organization_id says. */
  tenant: string;
  /** Per-tenant gapless sequence number, claimed through a unique index; the ledger's order. */
  seq: number;
  /** UTC month of receipt (`YYYY-MM`) and the event's position within it: the monthly cap's count. */
  month: string;
  month_seq: number;
  received_at: Date;
  /** The Idempotency-Key the event was sent with, if any (not part of its API form). */
  idempotency_key?: string;
  /**
   * The event's salt (64 hex digits), which makes its leaf a v2 leaf (formats.ts); absent on events
   * written before v2 leaves, whose leaves are v1. Gone with the event when it is pruned or erased.
   */
  salt?: string;
  /**
   * The row's MAC (db/rowMacs.ts): written by the service with each event; absent on events written
   * before MACs, which start-up gives one only where a verified signed checkpoint covers them. An event
   * without a valid one is foreign: never signed, delivered or taken as authority.
   */
  mac?: string;
  /** Never on an event: its tombstone's mark (TombstoneDoc). */
  removed?: undefined;
}

export interface OrgDoc {
  _id: string;
  name: string;
  plan: Plan;
  /** Overrides the plan's cap when set. */
  monthly_cap: number | null;
  created_at: Date;
}

export interface ApiKeyDoc {
  /** SHA-256 of the key: lookups by `_id` are the one query every request makes. */
  _id: string;
  key_id: string;
  org_id: string;
  name: string;
  prefix: string;
  last4: string;
  /** What the key may do; absent on keys made before scopes existed, which may do everything (`scopesOf`). */
  scopes?: Scope[];
  created_at: Date;
  revoked_at: Date | null;
  /**
   * Null from creation on: uses are recorded in `api_key_uses` (ApiKeyUseDoc). A database written
   * before may hold a time here, which still counts. The repository fills it in on the keys it lists.
   */
  last_used_at: Date | null;
}

/**
 * When a key was last used, apart from the key's own document: FerretDB loses one of two concurrent
 * updates of a document (it writes back the whole document it read), so a use recorded at the moment
 * of a revocation could undo the revocation. The revocation is the only update of a key's document.
 */
/**
 * One document (`_id: 'keys'`) whose `mark` changes whenever a key is revoked: the writer re-checks the
 * keys of a round only when it changed, and reads it at most every 250 ms (a revocation waits that out
 * before it answers: src/db/apiKeyRepository.ts, `ActiveKeys`). Set, never
 * incremented: FerretDB may lose one of two concurrent updates, and either new value is a change.
 */
export interface RevocationMarkDoc {
  _id: 'keys';
  mark: string;
}

/**
 * What an API key's events must carry, settled once (services/producerKeys.ts): written by the first of
 * its first event (`producer_key` null: never bound) or its binding, and never changed, so no update
 * can race another (FerretDB's updates are not atomic; its unique `_id` is).
 */
export interface ProducerClaimDoc {
  /** The key's public id (`key_…`). */
  _id: string;
  org_id: string;
  /** The producer's Ed25519 verifier key, or null: the key's events are not signed. */
  producer_key: string | null;
  at: Date;
}

export interface ApiKeyUseDoc {
  /** The key's hash (its document's `_id`). */
  _id: string;
  last_used_at: Date;
}

/** The API form of a stored event (interface.md §2.1); absent optional fields are null. */
export const toEvent: (doc: EventDoc) => TEvent = toApiEvent;

/** The same event as JSON text, written without parsing the stored metadata back: the export's hot loop. */
export const toEventJson: (doc: EventDoc) => string = toApiEventJson;

/** The ledger's hashes of a stored event (`domain/ledger/eventHash.ts`), from the stored metadata text as it is. */
export function eventHashesOfDoc(doc: Omit<EventDoc, 'seq' | 'month' | 'month_seq'>): EventHashes {
  return eventHashesOfText(canonicalTextOfStored(doc), doc.salt);
}

/** What the leaf of a stored event commits to. */
export function leafCommitOfDoc(doc: EventDoc): LeafCommit {
  return leafCommitOf(eventHashesOfDoc(doc));
}

export interface AccountDoc {
  _id: string;
  /** Trimmed and lower-cased; unique. */
  email: string;
  /** Argon2id, PHC string format (parameters and salt included). */
  password_hash: string;
  /**
   * Only on accounts made before members existed: the organization created with the account. Start-up
   * turns it into an owner membership and removes it (`migrateLegacyAccounts`), so it is never read.
   */
  org_id?: string;
  created_at: Date;
}

/** An account's place in an organization: read at every dashboard request, so a change applies at once. */
export interface MemberDoc {
  _id: string;
  org_id: string;
  account_id: string;
  /** Kept here so that lists and self-audit events need not read accounts (emails do not change). */
  email: string;
  role: Role;
  created_at: Date;
}

/** An invitation to join an organization; its link's token is never stored, only its hash (`_id`). */
export interface InvitationDoc {
  _id: string;
  /** Its public id (revoking, listing). */
  id: string;
  org_id: string;
  email: string;
  role: Role;
  invited_by: string;
  created_at: Date;
  expires_at: Date;
}

/**
 * An invitation used: inserted under the invitation's id, so that of two accepts racing only one gets
 * past the unique `_id` (the one atomic step both databases offer), whatever became of the invitation.
 */
export interface InvitationUseDoc {
  _id: string;
  account_id: string;
  at: Date;
}

export interface SessionDoc {
  /** SHA-256 of the cookie's token: a leaked database does not hand out sessions. */
  _id: string;
  account_id: string;
  org_id: string;
  created_at: Date;
  /** Refreshed at most every few minutes; a session unused for the idle timeout ends. */
  last_seen_at: Date;
  /** Absolute end, whatever the activity. */
  expires_at: Date;
}

/**
 * What is left of a session that a membership change ended (in the sessions collection, under the same
 * `_id`): no account, only why, so that the cookie's next request can be told why it is refused. It goes
 * with the expired sessions at `expires_at`.
 */
export interface EndedSessionDoc {
  _id: string;
  ended: SessionEnd;
  expires_at: Date;
}

export interface SessionEnd {
  /** `removed`: a member who manages members removed the account; `left`: the account left (from another device). */
  reason: 'removed' | 'left';
  org_id: string;
  /** The role of whoever removed them, as they held it then. */
  by_role: Role;
  at: Date;
}

/**
 * A running service instance, for the others to find (src/ingest/instances.ts). Liveness is read from
 * `beat` changing, timed by the reader's own clock, so instances need no agreement on the time.
 */
export interface InstanceDoc {
  /** Random, chosen at start. */
  _id: string;
  /** Where the other instances reach this one's internal listener (INTERNAL_HOST, INTERNAL_PORT). */
  url: string;
  /** The installation's MAC of id and url (src/ingest/instanceAuth.ts): entries without a valid one are ignored. */
  mac: string;
  /** Bumped every heartbeat. */
  beat: number;
  started_at: Date;
}

/**
 * An Idempotency-Key, claimed by the first request that sent it (src/services/idempotency.ts). The
 * events' ids are chosen here, once: every request with this key writes exactly these ids, so the unique
 * index on `_id` stores each event once, however many requests race or retry.
 */
export interface IdempotencyClaimDoc {
  /** SHA-256 of the tenant and the key: one claim per key per organization, taken by a unique insert. */
  _id: string;
  tenant: string;
  /** SHA-256 of the request as validated (services/idempotency.ts, `requestHash`). */
  request_hash: string;
  /** The ids of the request's events, in request order. */
  event_ids: string[];
  /** The first request's receipt time, and the key it was sent with: every retry stores the same events. */
  received_at: Date;
  api_key_id: string;
  expires_at: Date;
  /**
   * Set at start-up on a claim some of whose events are not stored, in an organization where a version
   * before tombstones had removed events (db/tombstones.ts): their ids were not kept, so a missing event
   * may be a removed one, and the request is never completed (services/idempotency.ts).
   */
  legacy_removed?: true;
}

/**
 * A tile of an organization's Merkle tree (C2SP tlog-tiles layout): up to 256 consecutive hashes of
 * one level of the tile tree (level 0: leaf hashes; level L: roots of complete 256^L-leaf subtrees).
 * Written once under an id that includes its width, so writers never overwrite each other: a partial
 * tile at the tree's right edge is written again, wider, as the tree grows, and its partial versions
 * are deleted once it is full (its prefix serves every older tree, as C2SP tlog-tiles allows).
 */
export interface LedgerTileDoc {
  /** `<tile>/<width, 3 digits>`. */
  _id: string;
  tenant: string;
  /** `<tenant>/<level>/<index>`: the same for every width of one tile. */
  tile: string;
  width: number;
  /** The width × 32 bytes of the hashes. */
  hashes: Binary;
}

/** A signed checkpoint of an organization's log; the same tree gives the same document, whoever signs it. */
export interface LedgerCheckpointDoc {
  /** `<tenant>/<size>`. */
  _id: string;
  tenant: string;
  size: number;
  /** Base64 of the RFC 6962 root. */
  root: string;
  /** The C2SP signed note. */
  note: string;
  created_at: Date;
}

/** One failed sign-in (or one sign-up), counted per account and per client address in a sliding window. */
export interface AuthAttemptDoc {
  _id: string;
  /** `login-email:<email>`, `login-ip:<address>` or `signup-ip:<address>`. */
  bucket: string;
  at: Date;
}

/**
 * Where an organization's newest signed checkpoint is: one document per log, so that finding it is a
 * point read (FerretDB would load and sort every checkpoint in Go). Raised with `$max` once a checkpoint
 * is stored; a crash in between leaves it one checkpoint behind, which the next round puts right.
 */
export interface LedgerHeadDoc {
  /** The tenant. */
  _id: string;
  size: number;
}

/** One export slot of an organization, held by one running export somewhere in the installation. */
export interface ExportLeaseDoc {
  /** `<tenant>/<slot>`. */
  _id: string;
  /** A random id of the export holding it. */
  holder: string;
  /** When the export is cut off at the latest (EXPORT_TIMEOUT_MS) and a minute more: then anyone may take it over. */
  expires_at: Date;
}

/**
 * An entry of the installation log: the body of an organization checkpoint (origin, size and root lines),
 * at index `_id`. Entries are claimed by inserting the next index (a duplicate loses and tries the next),
 * so the sequence is gapless whoever appends.
 */
export interface LedgerEntryDoc {
  _id: number;
  tenant: string;
  /** The organization checkpoint's id (`<tenant>/<size>`): how a reader finds its entry. */
  checkpoint: string;
  body: string;
  /** The row's MAC (db/rowMacs.ts): an entry without a valid one is foreign. */
  mac?: string;
}

/** A witness's cosignature on an installation checkpoint, verified before it was stored. */
export interface LedgerCosignatureDoc {
  /** `<checkpoint id>/<witness key id, 8 hex digits>`. */
  _id: string;
  /** The installation checkpoint's id (`installation/<size>`). */
  checkpoint: string;
  size: number;
  /** The witness's verifier key. */
  witness: string;
  /** The signature line, as the witness answered it. */
  line: string;
  /** The cosignature's own timestamp (Unix seconds). */
  time: number;
}

/**
 * What the service knows of one witness of its policy: the newest installation checkpoint it cosigned,
 * the last error, and an alarm: the witness holds a history the service's log does not extend (another
 * history was shown to it, or the database was wiped). An alarm stops the installation log and makes
 * `ledger audit` fail until an operator clears it.
 */
export interface LedgerWitnessDoc {
  /** The witness's verifier key. */
  _id: string;
  name: string;
  /** The size and root (base64) of the newest checkpoint it cosigned; 0 and null before any. */
  size: number;
  root: string | null;
  error: string | null;
  alarm: string | null;
  updated_at: Date;
}

/**
 * A log stream's configuration, written only by the API (create, pause, resume, delete). Delivery
 * progress is another document (`StreamProgressDoc`), written only by the delivering instance: FerretDB
 * writes a whole document back on every update, so two writers of one document could undo each other.
 */
export interface StreamDoc {
  /** A random UUID. */
  _id: string;
  tenant: string;
  /** Which of the organization's MAX_STREAMS_PER_ORG places it takes: unique per organization, so the limit holds however many creates race. */
  slot: number;
  name: string;
  /** The destination without its secrets. */
  destination: StreamDestination;
  format: StreamFormat;
  /** The first sequence number the stream delivers. */
  start_seq: number;
  /** The destination's secrets (and a webhook's signing secret), sealed with a key outside the database (src/streams/secretBox.ts). */
  sealed: string;
  paused: boolean;
  created_at: Date;
  /** Set by "Retry now": the delivering instance, at its next scan, ends the stream's backoff wait if it began before this. */
  retry_requested_at?: Date;
}

/** How far a stream got: written by the instance delivering it, read by the API for its state and lag. */
export interface StreamProgressDoc {
  /** The stream's id. */
  _id: string;
  tenant: string;
  /** Every event up to this sequence number was acknowledged by the destination. */
  delivered_seq: number;
  last_delivery_at: Date | null;
  /** The last failed attempt's error; cleared by the next acknowledged delivery. */
  last_error: string | null;
  /** When that attempt failed (absent in progress saved before it was kept). */
  last_error_at?: Date | null;
  /** When the current run of failures began (null: the last attempt succeeded). */
  failing_since: Date | null;
  /** While failing: when the next attempt is due (backoff or Retry-After), unless "Retry now" brings it forward. */
  next_attempt_at?: Date | null;
  /** Whether the run of failures has lasted longer than the failing limit (the metric and the warning). */
  failing: boolean;
  /** Deliveries per minute, the newest last, at most an hour of them. */
  history: { minute: Date; delivered: number; failed: number }[];
}

/**
 * A self-audit record made where no event writer runs (the admin CLI), waiting for a running instance
 * to write it into the organization's log (services/selfAudit.ts, `drainOutbox`). `_id` is the event's
 * id, chosen here: written twice (two instances draining at once, or a crash before the removal), the
 * unique `_id` of events stores it once.
 */
export interface AuditOutboxDoc {
  _id: string;
  tenant: string;
  actor: AuditActor;
  action: SelfAuditAction;
  resource: AuditResource;
  metadata: Record<string, unknown>;
  /** When the change was made: the event's timestamp. */
  at: Date;
  /** The row's MAC (db/rowMacs.ts), made by the admin CLI with the key file: the drain writes nothing without a valid one. */
  mac?: string;
}

/** A legal hold: events matching its filter (none: every event) are neither pruned nor erased while it stands. */
export interface RetentionHoldDoc {
  _id: string;
  org_id: string;
  filter: THoldFilter;
  reason: string;
  placed_at: Date;
  placed_by: string;
}

/**
 * What is left of an event that was pruned or erased: a tombstone in its place in the events collection,
 * under the event's id and at its (tenant, seq), so that the sequence stays gapless for every reader (the
 * writer's newest-event search, streams, the ledger, the audit) and the unique indexes keep the id and
 * the number taken for ever: no other event can be stored at that number, and a replayed request's
 * event is found removed instead of being stored again. It holds what the log needs once the body is
 * gone (the leaf's version and 32-byte commitment: entry bundles and reseals), the month and place in it
 * (the cap's count continues from the newest, even a removed one), how it was removed and the sequence
 * number of the log entry that authorized it. No body, no salt: a v2 leaf reveals nothing without it.
 */
export interface TombstoneDoc {
  _id: string;
  tenant: string;
  seq: number;
  month: string;
  month_seq: number;
  removed: RemovalKind;
  /** The retention entry (its sequence number) that names this event; null for leaves kept before tombstones whose entry could not be found. */
  removed_by: number | null;
  leaf_v: LeafCommit['v'];
  leaf: Binary;
  /** The row's MAC (db/rowMacs.ts), as an event's. */
  mac?: string;
}

export type RemovalKind = 'pruned' | 'erased';

/** What the events collection holds at a sequence number: the event, or its tombstone. */
export type StoredEvent = EventDoc | TombstoneDoc;

/** Documents that are events and not tombstones: a tombstone always has `removed`, an event never. */
export const LIVE = { removed: { $exists: false } } as const;

export function isTombstone(doc: StoredEvent): doc is TombstoneDoc {
  return (doc as Partial<TombstoneDoc>).removed !== undefined;
}

/** The tombstone that replaces `doc`, removed by the entry at `entry`. */
export function tombstoneOf(doc: EventDoc, removed: RemovalKind, entry: number | null): TombstoneDoc {
  const commit = leafCommitOfDoc(doc);
  return { _id: doc._id, tenant: doc.tenant, seq: doc.seq, month: doc.month, month_seq: doc.month_seq, removed, removed_by: entry, leaf_v: commit.v, leaf: new Binary(Buffer.from(commit.hash, 'hex')) };
}

/** What the leaf at a sequence number commits to, whether its event is there or only its tombstone. */
export function leafCommitOfStored(doc: StoredEvent): LeafCommit {
  return isTombstone(doc) ? { v: doc.leaf_v, hash: Buffer.from(doc.leaf.buffer).toString('hex') } : leafCommitOfDoc(doc);
}

/**
 * A leaf kept apart for a removed event by versions before tombstones (`kept_leaves`): read once, at
 * start-up, to become tombstones (db/tombstones.ts), and then removed.
 */
export interface LegacyKeptLeafDoc {
  tenant: string;
  seq: number;
  v: LeafCommit['v'];
  hash: Binary;
}

/** What list pages and exports say of an organization's removed events (the log's entries are the proof). */
export interface RetentionStateDoc {
  _id: string;
  pruned: number;
  erased: number;
  /** The newest prune's cutoff (events received before it may be gone) and its policy; absent until a prune. */
  pruned_before?: Date;
  policy_days?: number;
  /** Changed whenever events are removed (RetentionStore.markRemoval); absent until the first removal. */
  removal_mark?: string;
}

/** Which kind of row a foreign row was found as (db/rowMacs.ts). */
export type ForeignKind = 'event' | 'tombstone' | 'entry' | 'outbox';

/**
 * A row found without a valid MAC in a place the service needed (a sequence number or an index not
 * signed yet), moved here whole so that it can neither take that place nor be lost as evidence.
 */
export interface ForeignRowDoc {
  /** Random. */
  _id: string;
  kind: ForeignKind;
  /** Where it was met (the writer, the ledger, the drain, ...). */
  where: string;
  found_at: Date;
  /** The row as it was found (its `_id` included). */
  row: Record<string, unknown>;
}

/**
 * A fact about the installation's data. `row_macs`: every event and tombstone stored before it was
 * written was sealed with its MAC (ledger/legacyRows.ts), so a row without one is foreign, not an
 * earlier version's. Not authenticated, and need not be: without it, start-up looks again, and rows
 * no signed checkpoint covers are never sealed by that look.
 */
export interface InstallationStateDoc {
  _id: 'row_macs';
  at: Date;
  /** Its MAC (db/rowMacs.ts, kind `state`): a mark written into the database by someone else is no mark. */
  mac?: string;
}
