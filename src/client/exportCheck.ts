/**
 * An export checked against its proofs sidecar, with nothing but the pinned verifier key: the
 * checkpoint's signature, each event's hash recomputed from the exported JSON and its inclusion in the
 * signed tree, that every proof has its event and every event its proof, that an unfiltered export holds
 * every event of the tree but those a valid retention entry removed, and, against a checkpoint remembered
 * before, that the log only grew. Reading the files and fetching the proof are the caller's.
 */
import type { z } from 'zod';
import { type TEvent, ZEvent } from '../domain/event';
import { hashInputOfEvent } from '../domain/eventFields';
import { eventHashes, leafBytes, leafCommitOf } from '../domain/ledger/eventHash';
import { type Checkpoint, parseCheckpoint } from '../domain/ledger/formats';
import { leafHash, verifyConsistency, verifyInclusion } from '../domain/ledger/merkle';
import { openNote, type Verifier } from '../domain/ledger/note';
import type { ZProofsSidecar } from '../domain/ledger/schemas';
import { parseRangeBound } from '../domain/time';
import { checkRetention, formatRanges, type LogEntry, logEntryOf } from './retentionCheck';
import type { RecordVerdict } from './verdicts';

export type TProofsSidecar = z.infer<typeof ZProofsSidecar>;

const b64 = (s: string) => Buffer.from(s, 'base64');

/** Whether an export's filters (as its sidecar names them) select the whole log: then it must hold every event. */
export function isWholeLog(filters: Readonly<Record<string, string>>): boolean {
  return Object.keys(filters).length === 0;
}

/** Export order: newest first by (timestamp, id), as the export writes it. */
function inExportOrder(a: { timestamp: string; id: string }, b: { timestamp: string; id: string }): boolean {
  return a.timestamp > b.timestamp || (a.timestamp === b.timestamp && a.id > b.id);
}

/** An exported event exactly as the export writes it: every field, and no other. */
const ZExportedEvent = ZEvent.strict();

/** What is wrong with one exported item, naming each field; empty when it is an event exactly. */
export function eventProblems(item: unknown): string[] {
  const parsed = ZExportedEvent.safeParse(item);
  if (parsed.success) return [];
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return ['is not a JSON object'];
  return parsed.error.issues.flatMap((issue) => {
    const field = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => `unknown field ${key}`);
    if (issue.path.length === 1 && !(field in item)) return [`missing field ${field}`];
    return [`field ${field}: ${issue.message}`];
  });
}

const EQUALITY_FILTERS = ['actor_id', 'action', 'resource_type', 'resource_id', 'organization_id'] as const;

/** Whether an exported event is one the export's filters select (the dates as the service reads them). */
export function matchesFilters(event: TEvent, filters: Readonly<Record<string, string>>): boolean {
  for (const name of EQUALITY_FILTERS) if (filters[name] !== undefined && event[name] !== filters[name]) return false;
  const at = new Date(event.timestamp).getTime();
  const start = filters.start_date === undefined ? null : parseRangeBound(filters.start_date, 'start');
  const end = filters.end_date === undefined ? null : parseRangeBound(filters.end_date, 'end');
  return (!start || at >= start.getTime()) && (!end || at <= end.getTime());
}

/** What `checkExport` found: the signed checkpoint once its signature and origin checked out (null: the checks stopped before), the tree's size as far as known, and the items exported. */
export interface ExportFound {
  checkpoint: Checkpoint | null;
  treeSize: number | null;
  events: number;
  /** The events proven in the signed tree (for the checks that read their content: producer signatures). */
  proven: TEvent[];
}

/** Records the checks of an export (`items`, its parsed JSON) against its proofs sidecar. */
export function checkExport(verifier: Verifier, sidecar: TProofsSidecar, items: unknown, record: RecordVerdict): ExportFound {
  if (!Array.isArray(items)) {
    record(false, 'the export is not a JSON array of events');
    return { checkpoint: null, treeSize: null, events: 0, proven: [] };
  }
  let checkpoint: Checkpoint;
  try {
    checkpoint = parseCheckpoint(openNote(sidecar.checkpoint, verifier));
  } catch (error) {
    record(false, `checkpoint: not signed by ${verifier.name}: ${error instanceof Error ? error.message : String(error)}`);
    return { checkpoint: null, treeSize: null, events: items.length, proven: [] };
  }
  record(checkpoint.size === sidecar.tree_size, `checkpoint of ${checkpoint.size} events signed by ${verifier.text}`);
  const prefix = `${verifier.name}/`;
  if (!record(checkpoint.origin.startsWith(prefix), `checkpoint origin ${checkpoint.origin} belongs to key ${verifier.name}`)) return { checkpoint: null, treeSize: checkpoint.size, events: items.length, proven: [] };
  const org = checkpoint.origin.slice(prefix.length);
  const filters = sidecar.filters;

  const byId = new Map(sidecar.proofs.map((p) => [p.event_id, p]));
  /** Proofs whose event the export has not shown yet. */
  const proofs = new Map(byId);
  const leaves = new Map<number, string>();
  /** The log's retention entries among the exported events (their sequence numbers from their proofs). */
  const retention: LogEntry[] = [];
  const proven: TEvent[] = [];
  let failedEvents = 0;
  let previous: TEvent | undefined;
  items.forEach((item: unknown, position) => {
    const id = typeof item === 'object' && item !== null && typeof (item as { id?: unknown }).id === 'string' ? (item as { id: string }).id : null;
    const name = id ?? `#${position + 1}`;
    const problems = eventProblems(item);
    if (id) proofs.delete(id);
    if (problems.length) {
      failedEvents++;
      for (const problem of problems) record(false, `event ${name}: ${problem} (an export holds each event exactly as the service returns it)`);
      return;
    }
    const event = item as TEvent;
    if (previous && !inExportOrder(previous, event)) record(false, `event ${event.id}: out of the export's order (after ${previous.id})`);
    previous = event;
    if (!matchesFilters(event, filters)) record(false, `event ${event.id}: does not match the export's filters`);
    const proof = byId.get(event.id);
    if (!proof) {
      failedEvents++;
      record(false, `event ${event.id}: no proof in the sidecar (an event added to the export?)`);
      return;
    }
    const other = leaves.get(proof.leaf_index);
    if (other) record(false, `event ${event.id}: claims sequence number ${proof.leaf_index + 1}, as event ${other} does`);
    leaves.set(proof.leaf_index, event.id);
    if (proof.leaf_index >= checkpoint.size) {
      failedEvents++;
      record(false, `event ${event.id}: sequence number ${proof.leaf_index + 1} is beyond the signed tree of ${checkpoint.size}`);
      return;
    }
    const leaf = leafHash(leafBytes(org, proof.leaf_index + 1, leafCommitOf(eventHashes(hashInputOfEvent(event), proof.salt))));
    if (!verifyInclusion(proof.leaf_index, checkpoint.size, leaf, proof.inclusion_path.map(b64), checkpoint.root)) {
      failedEvents++;
      record(false, `event ${event.id}: not sequence number ${proof.leaf_index + 1} of the signed tree (changed, or moved from its place)`);
    } else {
      // Only a proven entry is an authority.
      proven.push(event);
      const entry = logEntryOf(proof.leaf_index + 1, event);
      if (entry) retention.push(entry);
    }
  });
  for (const missing of proofs.keys()) record(false, `event ${missing}: proven in the sidecar but missing from the export (removed?)`);
  record(failedEvents === 0 && proofs.size === 0, `${items.length - failedEvents} of ${items.length} events are in the signed tree of ${checkpoint.size}`);
  if (isWholeLog(filters)) checkComplete(checkpoint.size, leaves, retention, record);
  return { checkpoint, treeSize: checkpoint.size, events: items.length, proven };
}

/**
 * The whole log up to the checkpoint: leaves 0…size−1 (`leaves`, the exported ones), each exactly once,
 * or removed under a later prune or erasure entry of the same log that the log's own policy entries allow.
 */
function checkComplete(size: number, leaves: ReadonlyMap<number, string>, retention: LogEntry[], record: RecordVerdict): void {
  retention.sort((a, c) => a.seq - c.seq);
  const authority = checkRetention(retention);
  for (const problem of authority.problems) record(false, problem);
  const unexplained: number[] = [];
  const removed = { pruned: 0, erased: 0 };
  for (let index = 0; index < size; index++) {
    if (leaves.has(index)) continue;
    const by = authority.authority(index + 1);
    if (by) removed[by.kind]++;
    else unexplained.push(index + 1);
  }
  // An event that a valid entry removed has no place in the export: its removal did not finish, or it was put back.
  const back = new Set<number>();
  for (const { from, to } of authority.covered) for (let seq = from; seq <= Math.min(to, size); seq++) if (leaves.has(seq - 1)) back.add(seq);
  if (back.size > 0) record(false, `removed yet present: the export holds the events at sequence numbers ${formatRanges([...back].sort((a, c) => a - c), ', ')}, which a valid prune or erasure entry of the log removed (an unfinished removal, or an event put back)`);
  const gone = removed.pruned + removed.erased;
  if (gone > 0) record(true, `${removed.pruned} events pruned under the retention policy and ${removed.erased} erased on request, each covered by a later retention entry of the log`);
  record(
    unexplained.length === 0,
    unexplained.length === 0
      ? `the export holds every event of the signed tree${gone ? ' that no retention entry removed' : ''}: sequence numbers 1 to ${size}, each once`
      : `missing without authority: the export lacks the events at sequence numbers ${formatRanges(unexplained, ', ')} of the signed tree of ${size}, and no valid prune or erasure entry covers them (deleted, or left out)`,
  );
}

/** A consistency proof from the tree of `from` to the tree of `to`, fetched by the caller; null: none could be had. */
export type FetchProof = (from: number, to: number) => Promise<Uint8Array[] | null>;

/**
 * Records whether `checkpoint` and the one remembered in `where` (`saved`) are of one log that only grew:
 * the same root at the same size, else the consistency proof `fetchProof` gives (null: no way to fetch
 * one). Returns whether `checkpoint` is newer than the one remembered, to be remembered once the run passes.
 */
export async function checkRemembered(saved: Checkpoint, checkpoint: Checkpoint, where: string, fetchProof: FetchProof | null, record: RecordVerdict): Promise<boolean> {
  const [older, newer] = saved.size <= checkpoint.size ? [saved, checkpoint] : [checkpoint, saved];
  if (older.size === newer.size) {
    record(Buffer.from(older.root).equals(newer.root), `the checkpoint of ${newer.size} is the one remembered in ${where}`);
  } else {
    if (!fetchProof) {
      record(false, `consistency with the remembered checkpoint of ${saved.size}: needs --url and --key to fetch the proof`);
      return false;
    }
    const proof = await fetchProof(older.size, newer.size);
    const consistent = proof !== null && verifyConsistency(older.size, newer.size, proof, older.root, newer.root);
    record(consistent, `the log of ${newer.size} extends the one of ${older.size} remembered before (nothing rewritten)`);
    if (!consistent) return false;
  }
  return saved.size < checkpoint.size;
}
