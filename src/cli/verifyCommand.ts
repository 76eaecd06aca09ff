/**
 * `cli verify`: checks a JSON export against its proofs sidecar offline, with nothing but the pinned
 * verifier key: the checkpoint's signature, each event's hash recomputed from the exported JSON and its
 * inclusion in the signed tree, that every proof has its event and every event its proof, and, against
 * the checkpoint a state file remembers, that the log only grew (fetching the consistency proof with
 * --url and --key). Prints a verdict per check; any failure makes the exit code 1.
 */
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { type TEvent, ZEvent } from '../domain/event';
import { parseRangeBound } from '../domain/time';
import { checkRetention, formatRanges, type LogEntry, logEntryOf } from '../domain/retention';
import { eventHashes, leafBytes, leafCommitOf } from '../domain/ledger/eventHash';
import { hashInputOfEvent } from '../domain/eventFields';
import { leafHash, verifyConsistency, verifyInclusion } from '../domain/ledger/merkle';
import { type Checkpoint, parseCheckpoint } from '../domain/ledger/formats';
import { openNote, parseVerifierKey, type Verifier } from '../domain/ledger/note';
import { type TInstallationInclusion, ZProofsSidecar } from '../domain/ledger/schemas';
import { cosignersOf } from '../domain/ledger/cosigner';
import { checkpointBody, parsePolicy, type Policy, quorumMet } from '../domain/ledger/witnessFormats';
import { CliFailure, httpFailure, readJsonOptionFile, readOptionFile } from './failure';

export interface VerifyOptions {
  verifierKey: string;
  events: string;
  proofs: string;
  state: string | undefined;
  url: string | undefined;
  key: string | undefined;
  /** A c2sp.org/tlog-policy file: the installation checkpoint's cosignatures must meet its quorum. */
  policy?: string | undefined;
}

export interface Verdict {
  ok: boolean;
  check: string;
}

export interface VerifySummary extends Record<string, unknown> {
  ok: boolean;
  tree_size: number | null;
  events: number;
  /**
   * What a passing verification proves: `complete`, the export holds exactly the events 1…tree_size of
   * the log; `inclusion`, it was filtered, so each exported event is proven to be in the signed tree
   * but not that every matching event is there.
   */
  scope: 'complete' | 'inclusion';
  /** The filters the export and its proofs were made with ({}: none). */
  filters: Record<string, string>;
  failures: string[];
  verdicts: Verdict[];
  /** The witnesses whose cosignatures verified (null: no policy given, no witness was checked). */
  witnesses: string[] | null;
}

const b64 = (s: string) => Buffer.from(s, 'base64');

/** Export order: newest first by (timestamp, id), as the export writes it. */
function inExportOrder(a: { timestamp: string; id: string }, b: { timestamp: string; id: string }): boolean {
  return a.timestamp > b.timestamp || (a.timestamp === b.timestamp && a.id > b.id);
}

/** An exported event exactly as the export writes it: every field, and no other. */
const ZExportedEvent = ZEvent.strict();

/** What is wrong with one exported item, naming each field; null when it is an event exactly. */
function eventProblems(item: unknown): string[] {
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
function matchesFilters(event: TEvent, filters: Record<string, string>): boolean {
  for (const name of EQUALITY_FILTERS) if (filters[name] !== undefined && event[name] !== filters[name]) return false;
  const at = new Date(event.timestamp).getTime();
  const start = filters.start_date === undefined ? null : parseRangeBound(filters.start_date, 'start');
  const end = filters.end_date === undefined ? null : parseRangeBound(filters.end_date, 'end');
  return (!start || at >= start.getTime()) && (!end || at <= end.getTime());
}

export async function runVerify(options: VerifyOptions): Promise<VerifySummary> {
  const verdicts: Verdict[] = [];
  const record = (ok: boolean, check: string) => {
    verdicts.push({ ok, check });
    return ok;
  };

  const verifier = parseVerifierKey(options.verifierKey);
  // Every input is read before anything is checked or written: a file that cannot be read fails the run
  // at once, with nothing remembered in --state.
  const parsedSidecar = ZProofsSidecar.safeParse(readJsonOptionFile(options.proofs, 'proofs', 'the .proofs.json file that export --with-proofs wrote'));
  if (!parsedSidecar.success) throw new CliFailure(`Cannot read ${options.proofs} (--proofs): it is not a proofs sidecar; give the .proofs.json file that export --with-proofs wrote`);
  const sidecar = parsedSidecar.data;
  const items: unknown = readJsonOptionFile(options.events, 'events', 'the JSON file that export --format json wrote');
  const policyText = options.policy === undefined ? null : readOptionFile(options.policy, 'policy');
  const filters = sidecar.filters;
  const unfiltered = Object.keys(filters).length === 0;
  let witnesses: string[] | null = null;
  const summary = (treeSize: number | null, events: number): VerifySummary => {
    const failures = verdicts.filter((v) => !v.ok).map((v) => v.check);
    return { ok: failures.length === 0, tree_size: treeSize, events, scope: unfiltered ? 'complete' : 'inclusion', filters, failures, verdicts, witnesses };
  };
  if (!Array.isArray(items)) {
    record(false, 'the export is not a JSON array of events');
    return summary(null, 0);
  }

  let checkpoint: Checkpoint;
  try {
    checkpoint = parseCheckpoint(openNote(sidecar.checkpoint, verifier));
  } catch (error) {
    record(false, `checkpoint: not signed by ${verifier.name}: ${error instanceof Error ? error.message : String(error)}`);
    return summary(null, items.length);
  }
  record(checkpoint.size === sidecar.tree_size, `checkpoint of ${checkpoint.size} events signed by ${verifier.text}`);
  const prefix = `${verifier.name}/`;
  if (!record(checkpoint.origin.startsWith(prefix), `checkpoint origin ${checkpoint.origin} belongs to key ${verifier.name}`)) return summary(checkpoint.size, items.length);
  const org = checkpoint.origin.slice(prefix.length);

  const byId = new Map(sidecar.proofs.map((p) => [p.event_id, p]));
  /** Proofs whose event the export has not shown yet. */
  const proofs = new Map(byId);
  const leaves = new Map<number, string>();
  /** The log's retention entries among the exported events (their sequence numbers from their proofs). */
  const retention: LogEntry[] = [];
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
      const entry = logEntryOf(proof.leaf_index + 1, event);
      if (entry) retention.push(entry);
    }
  });
  for (const missing of proofs.keys()) record(false, `event ${missing}: proven in the sidecar but missing from the export (removed?)`);
  record(failedEvents === 0 && proofs.size === 0, `${items.length - failedEvents} of ${items.length} events are in the signed tree of ${checkpoint.size}`);

  if (unfiltered) {
    // The whole log up to the checkpoint: leaves 0…size−1, each exactly once, or removed under a later
    // prune or erasure entry of the same log that the log's own policy entries allow.
    retention.sort((a, c) => a.seq - c.seq);
    const authority = checkRetention(retention);
    for (const problem of authority.problems) record(false, problem);
    const unexplained: number[] = [];
    const removed = { pruned: 0, erased: 0 };
    for (let index = 0; index < checkpoint.size; index++) {
      if (leaves.has(index)) continue;
      const by = authority.authority(index + 1);
      if (by) removed[by.kind]++;
      else unexplained.push(index + 1);
    }
    // An event that a valid entry removed has no place in the export: its removal did not finish, or it was put back.
    const back = new Set<number>();
    for (const { from, to } of authority.covered) for (let seq = from; seq <= Math.min(to, checkpoint.size); seq++) if (leaves.has(seq - 1)) back.add(seq);
    if (back.size > 0) record(false, `removed yet present: the export holds the events at sequence numbers ${formatRanges([...back].sort((a, c) => a - c), ', ')}, which a valid prune or erasure entry of the log removed (an unfinished removal, or an event put back)`);
    const gone = removed.pruned + removed.erased;
    if (gone > 0) record(true, `${removed.pruned} events pruned under the retention policy and ${removed.erased} erased on request, each covered by a later retention entry of the log`);
    record(
      unexplained.length === 0,
      unexplained.length === 0
        ? `the export holds every event of the signed tree${gone ? ' that no retention entry removed' : ''}: sequence numbers 1 to ${checkpoint.size}, each once`
        : `missing without authority: the export lacks the events at sequence numbers ${formatRanges(unexplained, ', ')} of the signed tree of ${checkpoint.size}, and no valid prune or erasure entry covers them (deleted, or left out)`,
    );
  }

  const remember = options.state ? await checkAgainstState(options, verifier, checkpoint, record) : false;
  if (policyText !== null) witnesses = checkWitnessed(policyText, verifier, sidecar.checkpoint, sidecar.installation ?? null, record);
  const result = summary(checkpoint.size, items.length);
  // Only a run that verified everything moves the remembered checkpoint on.
  if (remember && result.ok && options.state) saveCheckpoint(options.state, sidecar.checkpoint);
  return result;
}

/**
 * The witnesses' part: the organization checkpoint is an entry of an installation checkpoint signed by
 * the same key, whose cosignatures (cosignature/v1) by the policy's witnesses meet its quorum. Returns
 * the witnesses whose cosignatures verified.
 */
function checkWitnessed(policyText: string, verifier: Verifier, orgCheckpoint: string, installation: TInstallationInclusion | null, record: (ok: boolean, check: string) => boolean): string[] {
  const policy = parsePolicy(policyText);
  if (!installation) {
    record(false, 'no installation checkpoint includes the checkpoint in the proofs: it is not witnessed (export again in a few seconds)');
    return [];
  }
  let tree: Checkpoint;
  try {
    tree = parseCheckpoint(openNote(installation.checkpoint, verifier));
  } catch (error) {
    record(false, `installation checkpoint: not signed by ${verifier.name}: ${error instanceof Error ? error.message : String(error)}`);
    return [];
  }
  record(tree.origin === `${verifier.name}/installation` && tree.size === installation.tree_size, `installation checkpoint ${tree.origin} of ${tree.size} entries signed by ${verifier.name}`);
  const cosigned = checkQuorum(installation.checkpoint, policy, record);
  record(
    installation.entry === checkpointBody(orgCheckpoint) &&
      verifyInclusion(installation.entry_index, tree.size, leafHash(installation.entry), installation.inclusion_path.map(b64), tree.root),
    `the organization checkpoint is entry ${installation.entry_index} of the witnessed installation tree`,
  );
  return cosigned;
}

/** Records whether the cosignatures on an installation checkpoint's `note` meet the policy's quorum; returns the witnesses that cosigned. */
export function checkQuorum(note: string, policy: Policy, record: (ok: boolean, check: string) => boolean): string[] {
  const cosigned = cosignersOf(note, policy);
  const met = quorumMet(policy, new Set(cosigned));
  record(met, `cosigned by ${cosigned.join(', ') || 'no witness of the policy'}: the policy's quorum (${policy.quorum}) is ${met ? 'met' : 'NOT met'}`);
  return cosigned;
}

/**
 * The state file: the newest checkpoint verified so far. The log may only have grown since. Returns
 * whether the checkpoint verified now is newer than the one remembered (to be saved if the run passes).
 */
async function checkAgainstState(
  options: VerifyOptions,
  verifier: Verifier,
  checkpoint: Checkpoint,
  record: (ok: boolean, check: string) => boolean,
): Promise<boolean> {
  const path = options.state as string;
  if (existsSync(path)) {
    let saved: Checkpoint;
    try {
      saved = parseCheckpoint(openNote(readOptionFile(path, 'state'), verifier));
    } catch (error) {
      if (error instanceof CliFailure) throw error;
      throw new CliFailure(`Cannot read ${path} (--state): it is not a checkpoint signed by ${verifier.name} (${error instanceof Error ? error.message : String(error)}); give the file an earlier verify with this key wrote`);
    }
    const [older, newer] = saved.size <= checkpoint.size ? [saved, checkpoint] : [checkpoint, saved];
    if (older.size === newer.size) {
      record(Buffer.from(older.root).equals(newer.root), `the checkpoint of ${newer.size} is the one remembered in ${path}`);
    } else {
      if (!options.url || !options.key) {
        record(false, `consistency with the remembered checkpoint of ${saved.size}: needs --url and --key to fetch the proof`);
        return false;
      }
      const url = new URL(`/v1/ledger/consistency?from=${older.size}&to=${newer.size}`, options.url);
      const response = await fetch(url, { headers: { authorization: `Bearer ${options.key}` } });
      if (response.status === 401 || response.status === 403) throw httpFailure('give the consistency proof', response.status, await response.text());
      const body = (await response.json()) as { proof?: string[] };
      const consistent = response.ok && Array.isArray(body.proof) && verifyConsistency(older.size, newer.size, body.proof.map(b64), older.root, newer.root);
      record(consistent, `the log of ${newer.size} extends the one of ${older.size} remembered before (nothing rewritten)`);
      if (!consistent) return false;
    }
    if (saved.size >= checkpoint.size) return false;
  }
  return true;
}

/** Replaces the state file whole: written beside it and renamed over it, so a kill leaves the old one or the new. */
function saveCheckpoint(path: string, note: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, note, { flag: 'wx', mode: 0o600 });
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
