/**
 * Tamper detection on the server: rebuilds every leaf from the stored events and compares the tree with
 * what was signed. The signed checkpoints are the anchor: the stored tiles are trusted only once they
 * reproduce the newest checkpoint's root (nobody can make other hashes do that), and then they say which
 * event each leaf held, so each difference is named: an event edited, deleted, inserted or moved.
 *
 * It streams: events in sequence order and tiles one at a time, keeping only what differs, so its memory
 * stays flat whatever the organization's size, and it yields the event loop every few hundred events (the
 * background audit runs inside the server).
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { checkpointProblem } from '../domain/ledger/checkpoint';
import { eventLeafHash } from '../domain/ledger/eventHash';
import { leafHash, RootAccumulator } from '../domain/ledger/merkle';
import type { Signer, Verifier } from '../domain/ledger/note';
import { RowMac } from '../domain/ledger/rowMac';
import { isOwnEntry, isOwnStored } from '../db/rowMacs';
import { TILE_WIDTH } from '../domain/ledger/tiles';
import { isTombstone, leafCommitOfStored, type LedgerEntryDoc, toEvent } from '../db/documents';
import { checkRetention, type LogEntry, logEntryOf } from '../client/retentionCheck';
import type { LedgerStore, TenantLedgerStore } from '../db/ledgerStore';
import type { WitnessStore } from '../db/witnessStore';
import { INSTALLATION, logOrigin } from '../domain/ledger/log';
import { entryFieldsOfBody, signedLeafIs } from './installationEntries';
import { TileReader } from './tileReader';

/** How far from its signed place a moved event is looked for; one moved further is reported as an edit. */
const MOVE_WINDOW = 256;
/** Events read between two yields to the event loop. */
const YIELD_EVERY = 500;
/** A log without any checkpoint is reported once its first event is older than this (a new log gets its first within a round). */
const UNANCHORED_GRACE_MS = 60_000;
/**
 * How long a removal may be under way: its entry is written first, its tombstones after (a prune or
 * erasure holds its lease for at most 10 minutes). A covered event still stored after that is a finding.
 */
const REMOVAL_GRACE_MS = 10 * 60_000;

export type FindingKind = 'foreign' | 'edited' | 'deleted' | 'inserted' | 'moved' | 'tiles' | 'checkpoint' | 'gap' | 'unanchored' | 'installation' | 'witness' | 'retention';

export interface Finding {
  kind: FindingKind;
  /** Where in the log, when it is about one leaf. */
  leaf_index?: number;
  event_id?: string;
  detail: string;
}

export interface AuditReport {
  tenant: string;
  events: number;
  /** The newest checkpoint's size: what the audit could check against a signature. */
  checkpoint_size: number;
  checkpoints: number;
  /** Events gone under a valid retention entry: pruned by policy, erased on request. */
  removed: { pruned: number; erased: number };
  findings: Finding[];
}

/** The signing key itself, when `verifier` is one (the service's, the key file's), not only a verifier key. */
function signerOf(verifier: Verifier | null): Signer | null {
  return verifier && 'privateKey' in verifier ? (verifier as Signer) : null;
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Audits the log of `store`'s organization; `verifier`: the installation's key, when known (its name is the ledger's). */
export async function auditLog(store: TenantLedgerStore, verifier: Verifier | null, now: Date = new Date(), keyFile: Signer | null = signerOf(verifier)): Promise<AuditReport> {
  const tenant = store.tenant;
  const findings: Finding[] = [];
  // With the key file (`keyFile`: the signing key, of the same key as `verifier`), every row's MAC is checked too (db/rowMacs.ts).
  const rowMac = keyFile && (!verifier || keyFile.publicKey.equals(verifier.publicKey)) ? RowMac.fromSigner(keyFile) : null;

  // Every checkpoint's signature, when the key is known, and its origin; the newest is the anchor.
  let newest: { size: number; root: string } | null = null;
  let checkpoints = 0;
  for await (const checkpoint of store.checkpointsNewestFirst()) {
    checkpoints++;
    newest ??= checkpoint;
    const problem = verifier && checkpointProblem(checkpoint, logOrigin(verifier.name, tenant), verifier);
    if (problem) findings.push({ kind: 'checkpoint', detail: `checkpoint ${checkpoint.size}: ${problem}` });
  }
  const size = newest?.size ?? 0;
  const signedRoot = newest ? Buffer.from(newest.root, 'base64') : null;

  // The signed leaves, from the tiles, once they give the signed root (read tile by tile).
  const reader = new TileReader(store);
  const signedTile = (index: number) => reader.tile(0, index, Math.min(TILE_WIDTH, size - index * TILE_WIDTH));
  const signedLeaf = async (i: number) => (await signedTile(Math.floor(i / TILE_WIDTH)))[i % TILE_WIDTH] as Buffer;
  let tilesTrusted = false;
  if (signedRoot) {
    try {
      const fromTiles = new RootAccumulator();
      for (let tile = 0; tile * TILE_WIDTH < size; tile++) for (const leaf of await signedTile(tile)) fromTiles.push(leaf);
      if (!fromTiles.root()?.equals(signedRoot)) throw new Error('they do not give its root');
      tilesTrusted = true;
    } catch (error) {
      findings.push({ kind: 'tiles', detail: `the stored tiles cannot be checked against checkpoint ${size} (${message(error)}): events can be checked only as a whole` });
    }
  }

  // One pass over the events in sequence order. Kept: only the leaves that differ from what was signed.
  const fromEvents = new RootAccumulator();
  /** Whether every event 1…size is there (when the tiles cannot be trusted, only the whole can be checked). */
  const sequence = { whole: true };
  let events = 0;
  let expected = 1;
  let firstReceived: Date | null = null;
  /** Leaf index → the id of the event there now (undefined: none), for every leaf that differs. */
  const differing = new Map<number, string | undefined>();
  /** Leaf index → the signed place its event was found at. */
  const movedFrom = new Map<number, number>();
  /** Signed leaves whose event was found at another place. */
  const foundElsewhere = new Set<number>();
  /** The log's retention entries, which may explain events that are gone (domain/retention.ts). */
  const retention: LogEntry[] = [];
  /**
   * Leaf index → the tombstone there, where it carries the signed leaf (its removal still needs an entry's
   * authority); and which leaves hold their signed event (one bit each: a covered number whose event is
   * still there is found once the entries are known, which come after the events they cover).
   */
  const tombstones = new Map<number, { kind: string; by: number | null }>();
  const live = new Uint8Array(Math.ceil(size / 8));
  const missingUpTo = async (seq: number) => {
    for (; expected < seq; expected++) {
      if (expected > size) findings.push({ kind: 'gap', leaf_index: expected - 1, detail: `no event at sequence number ${expected}, after the newest checkpoint` });
      else if (tilesTrusted) differing.set(expected - 1, undefined);
      else sequence.whole = false;
      if (expected % YIELD_EVERY === 0) await yieldToLoop();
    }
  };
  for await (const doc of store.eventsInOrder()) {
    const removed = isTombstone(doc);
    if (!removed) {
      events++;
      firstReceived ??= doc.received_at;
    }
    if (doc.seq % YIELD_EVERY === 0) await yieldToLoop();
    if (doc.seq < expected) continue; // a duplicate sequence number cannot be stored (unique index)
    const foreign = rowMac !== null && !isOwnStored(rowMac, doc);
    if (foreign) {
      findings.push({ kind: 'foreign', leaf_index: doc.seq - 1, event_id: doc._id, detail: `the ${removed ? 'tombstone' : 'event'} at sequence number ${doc.seq} (id ${doc._id}) has no valid MAC: this installation did not write it as it is (inserted or changed behind its back); it is never signed, delivered or taken as authority` });
      // Past what was signed, it takes no number of the log's: the numbers before it are not gaps.
      if (doc.seq > size) continue;
    }
    await missingUpTo(doc.seq);
    expected = doc.seq + 1;
    // Only the service's own entries are authority for a removal.
    const entry = removed || foreign ? null : logEntryOf(doc.seq, toEvent(doc));
    if (entry) retention.push(entry);
    if (doc.seq > size) continue;
    const i = doc.seq - 1;
    const hash = leafCommitOfStored(doc);
    const leaf = eventLeafHash(tenant, doc.seq, hash);
    if (!tilesTrusted) {
      if (sequence.whole) fromEvents.push(leaf);
      continue;
    }
    if (leaf.equals(await signedLeaf(i))) {
      // A tombstone with the signed leaf: the event is gone, which only a retention entry may explain.
      if (removed) tombstones.set(i, { kind: doc.removed, by: doc.removed_by });
      else live[i >> 3] = (live[i >> 3] as number) | (1 << (i & 7));
      continue;
    }
    differing.set(i, doc._id);
    // A leaf commits to its position: the event is looked for at the signed leaves around it.
    for (let j = Math.max(0, i - MOVE_WINDOW); j < Math.min(size, i + MOVE_WINDOW + 1); j++) {
      if (j !== i && eventLeafHash(tenant, j + 1, hash).equals(await signedLeaf(j))) {
        movedFrom.set(i, j);
        foundElsewhere.add(j);
        break;
      }
    }
  }
  await missingUpTo(size + 1);
  const removed = { pruned: 0, erased: 0 };
  const report = (): AuditReport => ({ tenant, events, checkpoint_size: size, checkpoints, removed, findings });

  if (!signedRoot) {
    if (firstReceived && now.getTime() - firstReceived.getTime() > UNANCHORED_GRACE_MS) {
      findings.push({ kind: 'unanchored', detail: `${events} events are stored, but no signed checkpoint covers any of them: the ledger state is missing (the service will not seal them by itself; see \`ledger reseal\`)` });
    }
    return report();
  }
  if (!tilesTrusted) {
    if (!sequence.whole || !fromEvents.root()?.equals(signedRoot)) findings.push({ kind: 'edited', detail: `the events 1 to ${size} no longer give the root of checkpoint ${size}` });
    return report();
  }

  // Each difference, named. A leaf whose event is not the one signed there holds an event that was
  // moved, or one never signed: inserted if the signed event is found elsewhere (pushed aside), edited if
  // not. A signed leaf whose event is found nowhere, and not explained by an edit in its place, lost its
  // event: deleted.
  const editedAt = new Set<number>();
  const places = [...differing.keys()].sort((a, b) => a - b);
  for (const i of places) {
    const id = differing.get(i);
    if (id === undefined) continue;
    const from = movedFrom.get(i);
    if (from !== undefined) findings.push({ kind: 'moved', leaf_index: i, event_id: id, detail: `event ${id} was signed at sequence number ${from + 1} and now sits at ${i + 1}` });
    else if (foundElsewhere.has(i)) findings.push({ kind: 'inserted', leaf_index: i, event_id: id, detail: `event ${id} was never signed: it was inserted at sequence number ${i + 1}` });
    else {
      editedAt.add(i);
      findings.push({ kind: 'edited', leaf_index: i, event_id: id, detail: `event ${id} at sequence number ${i + 1} is not the event that was signed there: edited` });
    }
  }
  // A gone event is explained only by a later prune or erasure entry that the log's policy entries allow.
  const authority = checkRetention(retention);
  for (const problem of authority.problems) findings.push({ kind: 'retention', detail: problem });
  // A removal leaves a tombstone: a signed number that holds nothing lost its event (or its tombstone)
  // outside the service, whatever an entry says.
  for (const i of places) {
    if (foundElsewhere.has(i) || editedAt.has(i)) continue;
    // Its number holds nothing, or an event moved there from another place: either way not a tombstone.
    const by = differing.get(i) === undefined ? authority.authority(i + 1) : null;
    findings.push({ kind: 'deleted', leaf_index: i, detail: `sequence number ${i + 1}: the event signed there is gone and its number holds no tombstone, ${by ? `though the ${by.kind === 'pruned' ? 'prune' : 'erasure'} entry at sequence number ${by.by} covers it: deleted outside the service` : 'missing without authority (no valid prune or erasure entry covers it)'}` });
  }
  for (const [i, tombstone] of tombstones) {
    const by = authority.authority(i + 1);
    if (!by) findings.push({ kind: 'deleted', leaf_index: i, detail: `sequence number ${i + 1}: the event signed there is gone, missing without authority (no valid prune or erasure entry covers it)` });
    else {
      // A prune run again after a crash covers a number twice: the tombstone names one of the entries.
      if (tombstone.by === null || !authority.removedBy(i + 1, tombstone.by, tombstone.kind as 'pruned' | 'erased')) {
        findings.push({ kind: 'retention', leaf_index: i, detail: `sequence number ${i + 1}: its tombstone says ${tombstone.kind} by the entry at ${tombstone.by ?? 'none'}, which does not remove it (the ${by.kind === 'pruned' ? 'prune' : 'erasure'} entry at sequence number ${by.by} does)` });
      }
      removed[by.kind]++;
    }
  }
  // A number a valid entry removed whose event is stored: the removal did not finish, or it was put back.
  const named = new Set<number>();
  const recordedAt = new Map(retention.map((entry) => [entry.seq, Date.parse(entry.timestamp)]));
  for (const { from, to, by, kind } of authority.covered) {
    if (now.getTime() - (recordedAt.get(by) ?? 0) < REMOVAL_GRACE_MS) continue;
    for (let seq = from; seq <= Math.min(to, size); seq++) {
      const i = seq - 1;
      if (((live[i >> 3] as number) & (1 << (i & 7))) === 0 || named.has(i)) continue;
      named.add(i);
      findings.push({ kind: 'retention', leaf_index: i, detail: `sequence number ${seq}: the ${kind === 'pruned' ? 'prune' : 'erasure'} entry at sequence number ${by} removed it, yet its event is stored there: the removal did not finish (a prune finishes at its next run; run the erasure again) or the event was put back` });
    }
  }
  return report();
}

/** Findings about single installation entries, at most; past this many, one finding says how many more. */
const MAX_ENTRY_FINDINGS = 100;

/** The ledger's name, from an installation checkpoint's origin line (`<name>/installation`). */
function ledgerNameOf(note: string): string | null {
  const origin = note.slice(0, note.indexOf('\n'));
  return origin.endsWith(`/${INSTALLATION}`) ? origin.slice(0, -INSTALLATION.length - 1) : null;
}

/**
 * What is wrong with an installation entry as stored, or null: its `tenant` and `checkpoint` fields must
 * be what its body says (`name`: the ledger's, when known), and, with the key file (`rowMac`), its MAC
 * valid for what it holds at its index. An entry copied to another index or relabelled is foreign.
 */
function entryProblem(entry: LedgerEntryDoc, name: string | null, rowMac: RowMac | null): string | null {
  if (typeof entry.body !== 'string') return 'it has no body';
  const fields = name === null ? null : entryFieldsOfBody(name, entry.body);
  if (name !== null && !fields) return 'its body is not a checkpoint of one of this installation\'s organization logs';
  if (fields && entry.tenant !== fields.tenant) return `its tenant field says ${entry.tenant}, but its body is a checkpoint of ${fields.tenant}'s log: relabelled`;
  if (fields && entry.checkpoint !== fields.checkpoint) return `its checkpoint field says ${entry.checkpoint}, but its body is the checkpoint ${fields.checkpoint}`;
  if (rowMac && !isOwnEntry(rowMac, entry)) {
    return entry.mac === undefined
      ? 'it has no MAC: this installation did not write it (an entry from before MACs inside the signed tree gets one when the service starts)'
      : 'its MAC is not valid: this installation did not write it as it is (inserted, copied from another index or organization, or changed behind its back)';
  }
  return null;
}

const wiped = (tenant: string, held: { size: number; index: number }) =>
  `organization ${tenant}: the installation log holds checkpoints of its log (the newest of ${held.size} events, at entry ${held.index}), but none is stored: its ledger state was deleted (its events' times of receipt do not matter; the service halts its log rather than sign a new history)`;

/**
 * The installation log and its witnesses: every stored installation checkpoint signed by the key; every
 * entry in its place, its `tenant` and `checkpoint` fields those of its body and, with the key file, its
 * MAC valid (else `foreign`); no entry missing from the signed tree, and the entries reproducing the
 * newest checkpoint's root (an entry edited, deleted or inserted changes it); every witness alarm (a
 * witness holds a history the log does not extend); and every organization whose checkpoints the
 * installation log holds (entries the key wrote, or that the signed tree covers) but none of whose
 * checkpoints is stored: its ledger state was deleted. One pass over the entries, in order.
 */
export async function auditInstallation(ledger: LedgerStore, witnesses: WitnessStore, verifier: Verifier | null): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const doc of await witnesses.all()) {
    if (doc.alarm) findings.push({ kind: 'witness', detail: `witness ${doc.name} raised an alarm: ${doc.alarm}` });
  }
  // With the key file (a signer, not only a verifier key), every entry's MAC is checked too (db/rowMacs.ts).
  const rowMac = verifier && 'privateKey' in verifier ? RowMac.fromSigner(verifier as Signer) : null;
  const store = ledger.forTenant(INSTALLATION);
  let newest: { size: number; root: string; note: string } | null = null;
  for await (const checkpoint of store.checkpointsNewestFirst()) {
    newest ??= checkpoint;
    if (verifier) {
      const problem = checkpointProblem(checkpoint, logOrigin(verifier.name, INSTALLATION), verifier);
      if (problem) findings.push({ kind: 'checkpoint', detail: `installation checkpoint of size ${checkpoint.size}: ${problem}` });
    }
  }
  const size = newest?.size ?? 0;
  const name = verifier?.name ?? (newest ? ledgerNameOf(newest.note) : null);
  let named = 0;
  const about = (finding: Finding) => {
    if (named++ < MAX_ENTRY_FINDINGS) findings.push(finding);
  };
  const root = new RootAccumulator();
  let missing = 0;
  let expected = 0;
  const absent = (index: number) => {
    if (index < size) {
      missing++;
      about({ kind: 'installation', leaf_index: index, detail: `installation log entry ${index} is missing from its signed tree of ${size}: deleted behind the service's back` });
    } else about({ kind: 'gap', leaf_index: index, detail: `installation log entry ${index} is missing, past its signed tree of ${size} (deleted, or a foreign entry moved aside)` });
  };
  /** Organization → the newest of its checkpoints the installation log holds (that count). */
  const held = new Map<string, { size: number; index: number }>();
  for await (const entry of ledger.entriesInOrder()) {
    if (!Number.isInteger(entry._id) || entry._id < expected) {
      about({ kind: 'foreign', detail: `an installation log entry is stored under ${JSON.stringify(entry._id)}, which is no index of it: inserted behind the service's back` });
      continue;
    }
    for (; expected < entry._id; expected++) absent(expected);
    expected = entry._id + 1;
    if (expected % YIELD_EVERY === 0) await yieldToLoop();
    const problem = entryProblem(entry, name, rowMac);
    if (problem) about({ kind: 'foreign', leaf_index: entry._id, detail: `installation log entry ${entry._id}: ${problem}` });
    const signed = entry._id < size;
    if (signed) root.push(leafHash(typeof entry.body === 'string' ? entry.body : ''));
    // What an entry says of its organization counts where the key wrote it, or where the signed tree
    // covers it (checked as a whole: the root below); not its unauthenticated `tenant` field.
    const fields = name !== null && typeof entry.body === 'string' ? entryFieldsOfBody(name, entry.body) : null;
    if (fields && (signed || !problem)) {
      const checkpointSize = Number(fields.checkpoint.slice(fields.tenant.length + 1));
      if ((held.get(fields.tenant)?.size ?? -1) < checkpointSize) held.set(fields.tenant, { size: checkpointSize, index: entry._id });
    }
  }
  for (; expected < size; expected++) absent(expected);
  if (named > MAX_ENTRY_FINDINGS) findings.push({ kind: 'installation', detail: `${named - MAX_ENTRY_FINDINGS} more findings about installation log entries (the first ${MAX_ENTRY_FINDINGS} are listed)` });
  if (newest && missing === 0 && root.root()?.toString('base64') !== newest.root) {
    findings.push({ kind: 'installation', detail: `the installation log's entries do not give the root of its signed checkpoint of size ${size}: an entry was changed` });
  }
  for (const [tenant, at] of held) {
    if (!(await ledger.forTenant(tenant).newestBySize())) findings.push({ kind: 'unanchored', detail: wiped(tenant, at) });
  }
  return findings;
}

/**
 * For one organization audited alone: whether the installation log holds checkpoints of its log (by the
 * entries' bodies; each written by the key, or, inside the signed installation tree, the leaf signed at
 * its index; without the key file, every entry inside the signed tree) while none of its checkpoints is
 * stored: its ledger state was deleted, whatever its events' times of receipt say.
 */
export async function auditEntriesOf(ledger: LedgerStore, tenant: string, verifier: Verifier | null): Promise<Finding[]> {
  const rowMac = verifier && 'privateKey' in verifier ? RowMac.fromSigner(verifier as Signer) : null;
  if (await ledger.forTenant(tenant).newestBySize()) return [];
  const store = ledger.forTenant(INSTALLATION);
  const newest = await store.newestBySize();
  const name = verifier?.name ?? (newest ? ledgerNameOf(newest.note) : null);
  if (name === null) return [];
  const signedSize = newest && (!verifier || checkpointProblem(newest, logOrigin(name, INSTALLATION), verifier) === null) ? newest.size : 0;
  const tiles = new TileReader(store);
  let held: { size: number; index: number } | null = null;
  for await (const entry of ledger.entriesWithOrigin(logOrigin(name, tenant))) {
    const counts = rowMac && isOwnEntry(rowMac, entry) ? true : rowMac ? await signedLeafIs(tiles, signedSize, entry) : entry._id < signedSize;
    const fields = counts ? entryFieldsOfBody(name, entry.body) : null;
    if (!fields) continue;
    const checkpointSize = Number(fields.checkpoint.slice(fields.tenant.length + 1));
    if ((held?.size ?? -1) < checkpointSize) held = { size: checkpointSize, index: entry._id };
  }
  return held ? [{ kind: 'unanchored', detail: wiped(tenant, held) }] : [];
}
