/** Typed collections and their indexes; every index names the query it serves. */
import type { Collection, Db, IndexDescription } from 'mongodb';
import { isDuplicateKey } from './errors';
import { migrateKeptLeaves } from './tombstones';
import type {
  AccountDoc, ApiKeyDoc, ApiKeyUseDoc, ProducerClaimDoc, AuthAttemptDoc, RevocationMarkDoc, EventDoc, IdempotencyClaimDoc, InstanceDoc, LedgerCheckpointDoc, LedgerCosignatureDoc, LedgerEntryDoc, LedgerHeadDoc, LedgerTileDoc, LedgerWitnessDoc, OrgDoc, SessionDoc, EndedSessionDoc, ExportLeaseDoc, StreamDoc, StreamProgressDoc,
  MemberDoc, InvitationDoc, InvitationUseDoc, AuditOutboxDoc, RetentionHoldDoc, LegacyKeptLeafDoc, RetentionStateDoc, StoredEvent, ForeignRowDoc, InstallationStateDoc,
} from './documents';

export interface Collections {
  /**
   * The events, as the queries for live events see them: each such query names `LIVE` (documents.ts)
   * or a field only events have, so that no tombstone is taken for an event.
   */
  events: Collection<EventDoc>;
  /** The same collection as a gapless sequence: each number holds an event or its tombstone. */
  eventSlots: Collection<StoredEvent>;
  orgs: Collection<OrgDoc>;
  apiKeys: Collection<ApiKeyDoc>;
  apiKeyUses: Collection<ApiKeyUseDoc>;
  /** Whether each used or bound API key's events are signed, settled once (services/producerKeys.ts). */
  producerClaims: Collection<ProducerClaimDoc>;
  /** One document, read and written by `_id`. */
  revocations: Collection<RevocationMarkDoc>;
  accounts: Collection<AccountDoc>;
  sessions: Collection<SessionDoc>;
  /** The same collection: what remains of sessions a removal or leaving ended (`SessionRepository.endFor`). */
  endedSessions: Collection<EndedSessionDoc>;
  authAttempts: Collection<AuthAttemptDoc>;
  /** A handful of documents, one per running instance, read whole at each heartbeat: no index needed. */
  instances: Collection<InstanceDoc>;
  idempotencyClaims: Collection<IdempotencyClaimDoc>;
  ledgerTiles: Collection<LedgerTileDoc>;
  ledgerCheckpoints: Collection<LedgerCheckpointDoc>;
  /** Read and written by `_id` only. */
  ledgerHeads: Collection<LedgerHeadDoc>;
  /** The installation log's entries, by index (`_id`) and by the organization checkpoint they hold. */
  ledgerEntries: Collection<LedgerEntryDoc>;
  /** Witnesses' cosignatures on installation checkpoints, by checkpoint. */
  ledgerCosignatures: Collection<LedgerCosignatureDoc>;
  /** One document per witness of the policy, by `_id`. */
  ledgerWitnesses: Collection<LedgerWitnessDoc>;
  /** Export slots held across the installation, by `_id`. */
  exportLeases: Collection<ExportLeaseDoc>;
  /** Log streams' configurations, by organization. */
  streams: Collection<StreamDoc>;
  /** Each stream's delivery progress, by the stream's id. */
  streamProgress: Collection<StreamProgressDoc>;
  /** Who belongs to which organization, with which role. */
  members: Collection<MemberDoc>;
  /** Pending invitations, by token hash (`_id`) and by organization. */
  invitations: Collection<InvitationDoc>;
  /** Used invitations, by invitation id (`_id`): single use, decided by the unique `_id`. */
  invitationUses: Collection<InvitationUseDoc>;
  /** Self-audit records from the admin CLI, until an instance writes them (a handful: read whole). */
  auditOutbox: Collection<AuditOutboxDoc>;
  /** Legal holds, by organization. */
  retentionHolds: Collection<RetentionHoldDoc>;
  /** Leaves kept apart by versions before tombstones: turned into tombstones at start-up (db/tombstones.ts). */
  legacyKeptLeaves: Collection<LegacyKeptLeafDoc>;
  /** Counts of pruned and erased events by organization (`_id`). */
  retentionState: Collection<RetentionStateDoc>;
  /** Rows found without a valid MAC where the service needed the place they took, moved aside (db/foreignRows.ts): evidence, never read back. */
  foreignRows: Collection<ForeignRowDoc>;
  /** Facts about the whole installation's data, by name (`_id`): a handful of documents. */
  installationState: Collection<InstallationStateDoc>;
}

export function collections(db: Db): Collections {
  return {
    events: db.collection<EventDoc>('events'),
    eventSlots: db.collection<StoredEvent>('events'),
    orgs: db.collection<OrgDoc>('organizations'),
    apiKeys: db.collection<ApiKeyDoc>('api_keys'),
    apiKeyUses: db.collection<ApiKeyUseDoc>('api_key_uses'),
    producerClaims: db.collection<ProducerClaimDoc>('producer_claims'),
    revocations: db.collection<RevocationMarkDoc>('key_revocations'),
    accounts: db.collection<AccountDoc>('accounts'),
    sessions: db.collection<SessionDoc>('sessions'),
    endedSessions: db.collection<EndedSessionDoc>('sessions'),
    authAttempts: db.collection<AuthAttemptDoc>('auth_attempts'),
    instances: db.collection<InstanceDoc>('instances'),
    idempotencyClaims: db.collection<IdempotencyClaimDoc>('idempotency_keys'),
    ledgerTiles: db.collection<LedgerTileDoc>('ledger_tiles'),
    ledgerCheckpoints: db.collection<LedgerCheckpointDoc>('ledger_checkpoints'),
    ledgerHeads: db.collection<LedgerHeadDoc>('ledger_heads'),
    ledgerEntries: db.collection<LedgerEntryDoc>('ledger_entries'),
    ledgerCosignatures: db.collection<LedgerCosignatureDoc>('ledger_cosignatures'),
    ledgerWitnesses: db.collection<LedgerWitnessDoc>('ledger_witnesses'),
    exportLeases: db.collection<ExportLeaseDoc>('export_leases'),
    streams: db.collection<StreamDoc>('streams'),
    streamProgress: db.collection<StreamProgressDoc>('stream_progress'),
    members: db.collection<MemberDoc>('members'),
    invitations: db.collection<InvitationDoc>('invitations'),
    invitationUses: db.collection<InvitationUseDoc>('invitation_uses'),
    auditOutbox: db.collection<AuditOutboxDoc>('audit_outbox'),
    retentionHolds: db.collection<RetentionHoldDoc>('retention_holds'),
    legacyKeptLeaves: db.collection<LegacyKeptLeafDoc>('kept_leaves'),
    retentionState: db.collection<RetentionStateDoc>('retention_state'),
    foreignRows: db.collection<ForeignRowDoc>('foreign_rows'),
    installationState: db.collection<InstallationStateDoc>('installation_state'),
  };
}

// Every events index starts with the tenant: no query can be served across organizations.
const EVENT_INDEXES: IndexDescription[] = [
  // Claims the next sequence number atomically (a duplicate loses); the writer's point probes for a
  // tenant's newest event read it too.
  { key: { tenant: 1, seq: 1 }, name: 'tenant_seq', unique: true },
  // List and export without filters, newest first, keyset on (ts, _id).
  { key: { tenant: 1, ts: -1, _id: -1 }, name: 'tenant_ts_id' },
  // The same, filtered by one field each.
  { key: { tenant: 1, actor_id: 1, ts: -1, _id: -1 }, name: 'tenant_actor_ts_id' },
  { key: { tenant: 1, action: 1, ts: -1, _id: -1 }, name: 'tenant_action_ts_id' },
  { key: { tenant: 1, resource_type: 1, resource_id: 1, ts: -1, _id: -1 }, name: 'tenant_resource_ts_id' },
  { key: { tenant: 1, organization_id: 1, ts: -1, _id: -1 }, name: 'tenant_org_ts_id' },
  // The dashboard's events-per-day chart: counts by time of receipt (what the monthly cap meters).
  { key: { tenant: 1, received_at: 1 }, name: 'tenant_received' },
];

const API_KEY_INDEXES: IndexDescription[] = [
  // `key revoke KEY_ID` and the key that an event names.
  { key: { key_id: 1 }, name: 'key_id', unique: true },
  // An organization's keys in creation order (`key list --org`, the dashboard's keys page, newest first),
  // key_id breaking ties: the whole sort, so no in-memory sort. (Replaces `org_created`, which lacked
  // key_id; a database created before keeps that one, unused.)
  { key: { org_id: 1, created_at: 1, key_id: 1 }, name: 'org_created_key' },
];

const ACCOUNT_INDEXES: IndexDescription[] = [
  // Sign-in by email; also makes a second sign-up with the same email fail atomically.
  { key: { email: 1 }, name: 'email', unique: true },
  // Accounts made before members existed, found at start-up (migrateLegacyAccounts): none, once migrated.
  { key: { org_id: 1 }, name: 'legacy_org' },
];

const SESSION_INDEXES: IndexDescription[] = [
  // Clearing expired sessions (no TTL index: FerretDB 1.24 does not implement them).
  { key: { expires_at: 1 }, name: 'expires_at' },
  // Ending a member's sessions in one organization when they are removed.
  { key: { account_id: 1, org_id: 1 }, name: 'account_org' },
];

const MEMBER_INDEXES: IndexDescription[] = [
  // One membership per account and organization (a second accept loses); the organization's member list.
  { key: { org_id: 1, account_id: 1 }, name: 'org_account', unique: true },
  // The organizations of an account (sign-in, the switcher).
  { key: { account_id: 1 }, name: 'account' },
];

const INVITATION_INDEXES: IndexDescription[] = [
  // An organization's pending invitations, and revoking one by its id.
  { key: { org_id: 1, id: 1 }, name: 'org_id_id' },
];

// A claim is found by `_id` (which hashes in the tenant); this one serves clearing expired claims
// (no TTL index: FerretDB 1.24 does not implement them).
const IDEMPOTENCY_INDEXES: IndexDescription[] = [{ key: { expires_at: 1 }, name: 'expires_at' }];

// Tiles are read by `_id` (it names the tenant, the position and the width); a tile's partial versions
// are deleted by tile once it is full.
const TILE_INDEXES: IndexDescription[] = [{ key: { tenant: 1, tile: 1 }, name: 'tenant_tile' }];
// An organization's newest checkpoint, and the one of a given size.
const CHECKPOINT_INDEXES: IndexDescription[] = [{ key: { tenant: 1, size: -1 }, name: 'tenant_size' }];
// The installation log's entry of an organization checkpoint (entries are read by `_id` otherwise);
// and whether an organization ever had a checkpoint (a log found without one that had some was wiped),
// by a range on the entries' bodies, whose first line names the log (`tenant` is not authenticated:
// the index `tenant` that served it before stays unused in databases that have it).
const ENTRY_INDEXES: IndexDescription[] = [
  { key: { checkpoint: 1 }, name: 'checkpoint' },
  { key: { body: 1 }, name: 'body' },
];
// The cosignatures of one installation checkpoint.
const COSIGNATURE_INDEXES: IndexDescription[] = [{ key: { checkpoint: 1 }, name: 'checkpoint' }];

const STREAM_INDEXES: IndexDescription[] = [
  // An organization's streams, oldest first.
  { key: { tenant: 1, created_at: 1 }, name: 'tenant_created' },
  // One stream per place: the per-organization limit, decided by the unique index when creates race.
  { key: { tenant: 1, slot: 1 }, name: 'tenant_slot', unique: true },
];

// An organization's legal holds (read at each prune and erasure).
const HOLD_INDEXES: IndexDescription[] = [{ key: { org_id: 1 }, name: 'org' }];
/** The dashboard's list of an organization's bound keys. */
const PRODUCER_CLAIM_INDEXES: IndexDescription[] = [{ key: { org_id: 1 }, name: 'org' }];

const AUTH_ATTEMPT_INDEXES: IndexDescription[] = [
  // Counting recent attempts in one bucket.
  { key: { bucket: 1, at: 1 }, name: 'bucket_at' },
  // Clearing old attempts.
  { key: { at: 1 }, name: 'at' },
];

/** Every declared index, by collection name: what `test/helpers/queryShapes.ts` checks queries against. */
export const DECLARED_INDEXES: Readonly<Record<string, readonly IndexDescription[]>> = {
  events: EVENT_INDEXES,
  api_keys: API_KEY_INDEXES,
  producer_claims: PRODUCER_CLAIM_INDEXES,
  accounts: ACCOUNT_INDEXES,
  sessions: SESSION_INDEXES,
  auth_attempts: AUTH_ATTEMPT_INDEXES,
  idempotency_keys: IDEMPOTENCY_INDEXES,
  ledger_tiles: TILE_INDEXES,
  ledger_checkpoints: CHECKPOINT_INDEXES,
  ledger_entries: ENTRY_INDEXES,
  ledger_cosignatures: COSIGNATURE_INDEXES,
  streams: STREAM_INDEXES,
  members: MEMBER_INDEXES,
  invitations: INVITATION_INDEXES,
  retention_holds: HOLD_INDEXES,
};

/** Creates the indexes; awaited at start-up and in test set-up, so no query runs before they exist. */
export async function ensureIndexes(c: Collections): Promise<void> {
  // One index per command: FerretDB 1.24 panics on a createIndexes naming two or more existing indexes.
  for (const spec of EVENT_INDEXES) await c.events.createIndexes([spec]);
  for (const spec of API_KEY_INDEXES) await c.apiKeys.createIndexes([spec]);
  for (const spec of ACCOUNT_INDEXES) await c.accounts.createIndexes([spec]);
  for (const spec of SESSION_INDEXES) await c.sessions.createIndexes([spec]);
  for (const spec of AUTH_ATTEMPT_INDEXES) await c.authAttempts.createIndexes([spec]);
  for (const spec of IDEMPOTENCY_INDEXES) await c.idempotencyClaims.createIndexes([spec]);
  for (const spec of TILE_INDEXES) await c.ledgerTiles.createIndexes([spec]);
  for (const spec of CHECKPOINT_INDEXES) await c.ledgerCheckpoints.createIndexes([spec]);
  for (const spec of ENTRY_INDEXES) await c.ledgerEntries.createIndexes([spec]);
  for (const spec of COSIGNATURE_INDEXES) await c.ledgerCosignatures.createIndexes([spec]);
  for (const spec of STREAM_INDEXES) await c.streams.createIndexes([spec]);
  for (const spec of MEMBER_INDEXES) await c.members.createIndexes([spec]);
  for (const spec of INVITATION_INDEXES) await c.invitations.createIndexes([spec]);
  for (const spec of HOLD_INDEXES) await c.retentionHolds.createIndexes([spec]);
  await migrateLegacyAccounts(c);
  await migrateKeptLeaves(c);
}

/**
 * Accounts made before members existed name their organization in `org_id`: each becomes that
 * organization's owner, and the field goes, so a member removed later is never re-added. Idempotent and
 * safe for instances starting together (the unique (org, account) index takes one membership).
 */
export async function migrateLegacyAccounts(c: Collections): Promise<void> {
  for (const account of await c.accounts.find({ org_id: { $exists: true } }).toArray()) {
    if (account.org_id === undefined) continue;
    await c.members.insertOne({ _id: `mem_${account._id}_${account.org_id}`, org_id: account.org_id, account_id: account._id, email: account.email, role: 'owner', created_at: account.created_at })
      .catch((error: unknown) => { if (!isDuplicateKey(error)) throw error; });
    await c.accounts.updateOne({ _id: account._id }, { $unset: { org_id: '' } });
  }
}
