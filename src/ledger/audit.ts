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
import type { Verifier } from '../domain/ledger/note';
import { TILE_WIDTH } from '../domain/ledger/tiles';
import { isTombstone, leafCommitOfStored, toEvent } from '../db/documents';
import { checkRetention, type LogEntry, logEntryOf } from '../domain/retention';
import type { LedgerStore, TenantLedgerStore } from '../db/ledgerStore';
import type { WitnessStore } from '../db/witnessStore';
import { INSTALLATION, logOrigin } from './integrator';
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

export type FindingKind = 'edited' | 'deleted' | 'inserted' | 'moved' | 'tiles' | 'checkpoint' | 'gap' | 'unanchored' | 'installation' | 'witness' | 'retention';

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

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Audits the log of `store`'s organization; `verifier`: the installation's key, when known (its name is the ledger's). */
export async function auditLog(store: TenantLedgerStore, verifier: Verifier | null, now: Date = new Date()): Promise<AuditReport> {
  const tenant = store.tenant;
  const findings: Finding[] = [];

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
    await missingUpTo(doc.seq);
    expected = doc.seq + 1;
    const entry = removed ? null : logEntryOf(doc.seq, toEvent(doc));
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
    if (from !== undefined) findings.push({ kind: 'moved', leaf_index: i, event_id: id, detail: `event ${id} was signed at leaf ${from} and now sits at leaf ${i}` });
    else if (foundElsewhere.has(i)) findings.push({ kind: 'inserted', leaf_index: i, event_id: id, detail: `event ${id} was never signed: it was inserted at leaf ${i}` });
    else {
      editedAt.add(i);
      findings.push({ kind: 'edited', leaf_index: i, event_id: id, detail: `event ${id} at leaf ${i} is not the event that was signed there: edited` });
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
    findings.push({ kind: 'deleted', leaf_index: i, detail: `leaf ${i} (sequence number ${i + 1}): the event signed there is gone and its number holds no tombstone, ${by ? `though the ${by.kind === 'pruned' ? 'prune' : 'erasure'} entry at sequence number ${by.by} covers it: deleted outside the service` : 'missing without authority (no valid prune or erasure entry covers it)'}` });
  }
  for (const [i, tombstone] of tombstones) {
    const by = authority.authority(i + 1);
    if (!by) findings.push({ kind: 'deleted', leaf_index: i, detail: `leaf ${i} (sequence number ${i + 1}): the event signed there is gone, missing without authority (no valid prune or erasure entry covers it)` });
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

/**
 * The installation log and its witnesses: every stored installation checkpoint signed by the key, the
 * entries reproducing the newest one's root (an entry edited, deleted or inserted changes it), and
 * every witness alarm (a witness holds a history the log does not extend).
 */
export async function auditInstallation(ledger: LedgerStore, witnesses: WitnessStore, verifier: Verifier | null): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const doc of await witnesses.all()) {
    if (doc.alarm) findings.push({ kind: 'witness', detail: `witness ${doc.name} raised an alarm: ${doc.alarm}` });
  }
  const store = ledger.forTenant(INSTALLATION);
  let newest: { size: number; root: string } | null = null;
  for await (const checkpoint of store.checkpointsNewestFirst()) {
    newest ??= checkpoint;
    if (verifier) {
      const problem = checkpointProblem(checkpoint, logOrigin(verifier.name, INSTALLATION), verifier);
      if (problem) findings.push({ kind: 'checkpoint', detail: `installation checkpoint of size ${checkpoint.size}: ${problem}` });
    }
  }
  if (!newest) return findings;
  const root = new RootAccumulator();
  let count = 0;
  for await (const entry of ledger.entriesInOrder()) {
    if (entry._id !== count) {
      findings.push({ kind: 'installation', leaf_index: count, detail: `installation log entry ${count} is missing` });
      return findings;
    }
    if (count === newest.size) break;
    root.push(leafHash(entry.body));
    count++;
  }
  if (count < newest.size) findings.push({ kind: 'installation', detail: `the installation log holds ${count} entries; its signed checkpoint has ${newest.size}` });
  else if (root.root()?.toString('base64') !== newest.root) findings.push({ kind: 'installation', detail: `the installation log's entries do not give the root of its signed checkpoint of size ${newest.size}: an entry was changed` });
  return findings;
}
