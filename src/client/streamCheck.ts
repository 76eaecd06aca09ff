/**
 * What a log stream delivered, checked with nothing but the pinned verifier key: the lines of its
 * delivered objects (an S3 stream's objects, a webhook receiver's files: one item per line, and the
 * batch's `audit_ledger_checkpoint` line). Reading them is the caller's (`cli stream verify`).
 *
 * Each event's hash is recomputed from the delivered JSON and must be its receipt's; the sequence
 * numbers must run without a gap (a repeat must be the same event), except where a delivered retention
 * entry removed events before the stream reached them; every checkpoint must be signed by
 * the key for one organization's log; and, when the stream started at the first event, the Merkle root
 * of the delivered events must be the root of every checkpoint they reach. That last check proves the
 * delivered events are exactly the log's leaves 1…N, in order, nothing missing, nothing added.
 *
 * A failure says what happened, as far as the delivery shows it: an event that no longer hashes to its
 * receipt was edited (it is delivered, not missing); sequence numbers absent between delivered ones are
 * missing from the middle, named; a delivery that stops before the checkpoint given apart from it is
 * missing events from its end; and events that hash to their receipts but not to the signed leaves (an
 * event edited along with its receipt) are pinned between the last checkpoint they reproduce and the
 * first they do not.
 */
import { ZEvent } from '../domain/event';
import { hashInputOfEvent } from '../domain/eventFields';
import { eventHashes, eventLeafHash, leafCommitOf } from '../domain/ledger/eventHash';
import { type LeafCommit, parseCheckpoint, saltBytes, toBase64 } from '../domain/ledger/formats';
import { nodesOf, rootHash } from '../domain/ledger/merkle';
import { openNote, type Verifier } from '../domain/ledger/note';
import { checkRetention, type LogEntry, logEntryOf } from './retentionCheck';
import { type RecordVerdict, type Verdict, verdictList } from './verdicts';

export interface StreamVerifySummary extends Record<string, unknown> {
  ok: boolean;
  organization: string | null;
  /** Distinct events delivered, and how many arrived more than once. */
  events: number;
  repeats: number;
  first_seq: number | null;
  last_seq: number | null;
  /** The largest checkpoint whose root the delivered events reproduce (0: none could be checked). */
  verified_size: number;
  failures: string[];
  verdicts: Verdict[];
}

/** Sequence numbers (ascending) as runs of consecutive ones. */
export function runsOf(seqs: readonly number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const seq of seqs) {
    const last = runs.at(-1);
    if (last && seq === last[1] + 1) last[1] = seq;
    else runs.push([seq, seq]);
  }
  return runs;
}

/** How many runs a message names before it only counts the rest (a message stays one line). */
const RUNS_NAMED = 10;

/** "event 7", "events 4–6", "events 3, 9–10", "events 1–2, … and 14 more gaps". */
export function describeSeqs(seqs: readonly number[]): string {
  const runs = runsOf(seqs);
  const named = runs.slice(0, RUNS_NAMED).map(([from, to]) => (from === to ? String(from) : `${from}–${to}`)).join(', ');
  const more = runs.length > RUNS_NAMED ? ` and ${runs.length - RUNS_NAMED} more gaps` : '';
  return `${seqs.length === 1 ? 'event' : 'events'} ${named}${more}`;
}

/** The event and receipt of a delivered item, in either format; null for anything else. */
function itemOf(value: Record<string, unknown>): { event: unknown; receipt: { leaf_index: number; event_sha256: string; event_commitment?: string; salt?: string } } | null {
  const source = (value.class_uid === 6003 ? value.unmapped : value) as { event?: unknown; receipt?: Record<string, unknown> } | undefined;
  const receipt = source?.receipt;
  if (!source?.event || typeof receipt?.leaf_index !== 'number' || typeof receipt.event_sha256 !== 'string') return null;
  // seq is what people are shown; a receipt whose seq names another place than its leaf is not ours.
  if (receipt.seq !== undefined && receipt.seq !== receipt.leaf_index + 1) return null;
  const { salt, event_commitment: commitment } = receipt;
  if (salt !== undefined && (typeof salt !== 'string' || !saltBytes(salt) || typeof commitment !== 'string')) return null;
  return { event: source.event, receipt: { leaf_index: receipt.leaf_index, event_sha256: receipt.event_sha256, ...(typeof salt === 'string' ? { salt, event_commitment: commitment as string } : {}) } };
}

/** One delivered file: its name (as the verdicts name it) and its lines, read when their turn comes. */
export interface DeliveredFile {
  name: string;
  lines(): string[];
}

/**
 * Checks a delivery: `files`, in key order, found under `dir`; `givenCheckpoint`, the text of a
 * checkpoint fetched apart from the delivery, read when needed (what it throws is recorded).
 */
export async function checkDelivery(verifier: Verifier, dir: string, files: readonly DeliveredFile[], givenCheckpoint?: () => string): Promise<StreamVerifySummary> {
  const { verdicts, record, failures } = verdictList();
  const hashes = new Map<number, LeafCommit>();
  /** Events delivered but changed (they do not hash to their receipts): their leaves are unknown, yet they are not missing. */
  const edited = new Set<number>();
  /** Retention entries among the delivered events: they account for events a stream skips (removed before it got there). */
  const retention: LogEntry[] = [];
  let organization: string | null = null;
  const checkpoints = new Map<number, string>();
  let repeats = 0;
  record(files.length > 0, `${files.length} delivered file(s) under ${dir}`);
  for (const file of files) {
    for (const [n, line] of file.lines().entries()) {
      const where = `${file.name}:${n + 1}`;
      let value: Record<string, unknown>;
      try {
        value = JSON.parse(line) as Record<string, unknown>;
      } catch {
        record(false, `${where}: not JSON`);
        continue;
      }
      const checkpoint = value.audit_ledger_checkpoint as { note?: unknown } | undefined;
      if (checkpoint) {
        try {
          const signed = parseCheckpoint(openNote(String(checkpoint.note), verifier));
          const org = signed.origin.startsWith(`${verifier.name}/`) ? signed.origin.slice(verifier.name.length + 1) : null;
          if (!org || (organization !== null && org !== organization)) record(false, `${where}: a checkpoint of another log (${signed.origin})`);
          organization ??= org;
          const root = toBase64(signed.root);
          const seen = checkpoints.get(signed.size);
          if (seen !== undefined && seen !== root) record(false, `${where}: two checkpoints of size ${signed.size} with different roots: a forked log`);
          checkpoints.set(signed.size, root);
        } catch (error) {
          record(false, `${where}: a checkpoint not signed by ${verifier.name}: ${error instanceof Error ? error.message : String(error)}`);
        }
        continue;
      }
      if (value.test === true) continue;
      const item = itemOf(value);
      const event = item && ZEvent.strict().safeParse(item.event);
      if (!item || !event?.success) {
        record(false, `${where}: not an event with its receipt`);
        continue;
      }
      const seq = item.receipt.leaf_index + 1;
      // The leaf commits to what is computed here, from the event and (v2) its salt: never to the receipt's word.
      const computed = eventHashes(hashInputOfEvent(event.data), item.receipt.salt);
      const hash = leafCommitOf(computed);
      if (computed.event_sha256 !== item.receipt.event_sha256 || computed.event_commitment !== item.receipt.event_commitment) {
        edited.add(seq);
        record(false, `${where}: the event at sequence number ${seq} (${event.data.id}) was edited: it does not hash to its receipt`);
        continue;
      }
      const before = hashes.get(seq);
      if (before !== undefined) {
        repeats++;
        if (before.v !== hash.v || before.hash !== hash.hash) record(false, `${where}: sequence number ${seq} delivered twice as different events`);
        continue;
      }
      hashes.set(seq, hash);
      const entry = logEntryOf(seq, event.data);
      if (entry) retention.push(entry);
    }
  }
  // A checkpoint fetched apart from the delivery (GET /v1/ledger/checkpoint): the delivery must reach it,
  // so objects deleted from the end are caught too, which nothing inside the delivery can show.
  let required = 0;
  if (givenCheckpoint) {
    try {
      const signed = parseCheckpoint(openNote(givenCheckpoint(), verifier));
      const seen = checkpoints.get(signed.size);
      if (seen !== undefined && seen !== toBase64(signed.root)) record(false, `the given checkpoint of size ${signed.size} differs from the delivered one: a forked log`);
      checkpoints.set(signed.size, toBase64(signed.root));
      required = signed.size;
    } catch (error) {
      record(false, `the given checkpoint is not signed by ${verifier.name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  // Delivered sequence numbers, edited ones included: an edited event is there, only not as signed.
  const seqs = [...new Set([...hashes.keys(), ...edited])].sort((a, b) => a - b);
  const first = seqs[0] ?? null;
  const last = seqs.at(-1) ?? null;
  let verifiedSize = 0;
  if (first !== null && last !== null) {
    // A gap is allowed only where a delivered retention entry removed the events (pruned or erased).
    const authority = checkRetention(retention.sort((a, b) => a.seq - b.seq));
    for (const problem of authority.problems) record(false, problem);
    const missing: number[] = [];
    let removed = 0;
    for (let seq = first; seq <= last; seq++) {
      if (hashes.has(seq) || edited.has(seq)) continue;
      if (authority.authority(seq)) removed++;
      else missing.push(seq);
    }
    const removedNote = removed ? `; ${removed} removed under retention entries of the log, skipped` : '';
    record(missing.length === 0, missing.length === 0
      ? `${seqs.length} events, sequence numbers ${first}–${last} without a gap (${repeats} delivered again${removedNote})`
      : `${describeSeqs(missing)} ${missing.length === 1 ? 'is' : 'are'} missing from the middle of the stream: ${missing.length} sequence number(s) between ${first} and ${last} were never delivered, and no retention entry removed them`);
    if (organization === null) record(false, 'no signed checkpoint was delivered');
    else if (removed > 0) {
      verdicts.push({ ok: true, check: `events were removed under retention before the stream reached them: the checkpoints' roots cannot be recomputed without their leaves (check those with export --with-proofs)` });
    } else if (first !== 1) {
      verdicts.push({ ok: true, check: `the stream started at sequence number ${first}: the checkpoints' roots cannot be recomputed without the events before it (check those with export --with-proofs)` });
    } else if (missing.length === 0 && [...edited].every((seq) => hashes.has(seq))) {
      // An edited event's leaf is unknown (unless a good copy came too): no root can be recomputed over
      // it, and its failure is recorded already.
      const roots = await checkRoots(organization, hashes, last, checkpoints, record);
      verifiedSize = roots.verified;
      if (roots.held && verifiedSize < last) verdicts.push({ ok: true, check: `events ${verifiedSize + 1}–${last} are hashed and in order; the checkpoints delivered with them reach further than the delivery so far` });
    }
  }
  // Reaching the given checkpoint is about what was delivered: a gap or an edit inside the delivery is
  // reported above as what it is, never as events missing from the end.
  if (required > 0) {
    const reached = last ?? 0;
    const gone = reached + 1 === required ? `event ${required} is` : `events ${reached + 1}–${required} are`;
    record(reached >= required, reached >= required
      ? `the delivery reaches the given checkpoint of size ${required}`
      : `the delivery stops before the given checkpoint of size ${required} (delivered up to sequence number ${reached}): ${gone} missing from its end`);
  }
  const failed = failures();
  return { ok: failed.length === 0, organization, events: seqs.length, repeats, first_seq: first, last_seq: last, verified_size: verifiedSize, failures: failed, verdicts };
}

/**
 * Recomputes the root of every delivered checkpoint that the events 1…`last` reach, and answers the
 * largest one reproduced and whether all of them were. A leaf changed at sequence number s changes the root of every size ≥ s and of
 * none below, so the first checkpoint that fails and the last one before it that holds pin the changed
 * event between them: one failure names it, instead of one per checkpoint.
 */
async function checkRoots(organization: string, hashes: ReadonlyMap<number, LeafCommit>, last: number, checkpoints: ReadonlyMap<number, string>, record: RecordVerdict): Promise<{ verified: number; held: boolean }> {
  const nodes = nodesOf(Array.from({ length: last }, (_, i) => eventLeafHash(organization, i + 1, hashes.get(i + 1) as LeafCommit)));
  const reached = [...checkpoints].filter(([size]) => size <= last).sort((a, b) => a[0] - b[0]);
  if (reached.length === 0) {
    record(false, 'no delivered checkpoint is covered by the delivered events');
    return { verified: 0, held: false };
  }
  let verified = 0;
  const failed: number[] = [];
  for (const [size, root] of reached) {
    if (toBase64(await rootHash(nodes, size)) !== root) failed.push(size);
    else {
      record(true, `the events 1–${size} reproduce the signed checkpoint of size ${size}`);
      verified = size;
    }
  }
  const firstFailed = failed[0];
  if (firstFailed !== undefined) {
    // Every checkpoint smaller than the first that fails holds: the largest of them bounds the changed leaf from below.
    const held = reached.filter(([size]) => size < firstFailed).at(-1)?.[0] ?? 0;
    record(false, editedLeafMessage(held, firstFailed, failed.length - 1));
  }
  return { verified, held: firstFailed === undefined };
}

/** A leaf changed after the checkpoint of size `held` (0: none) and at or before the one of size `failed`, which `later` more fail with. */
function editedLeafMessage(held: number, failed: number, later: number): string {
  const which = held + 1 === failed ? `the event at sequence number ${failed}` : `an event at sequence numbers ${held + 1}–${failed}`;
  const holds = held > 0 ? `${upTo(held, 'reproduces', 'reproduce')} the signed checkpoint of size ${held}; ` : '';
  return `${which} was edited: it does not match its signed leaf (${holds}${upTo(failed, 'does not reproduce', 'do not reproduce')} the signed checkpoint of size ${failed}${later ? `, nor ${later} later one(s)` : ''})`;
}

/** "the event 1 reproduces", "the events 1–4 reproduce". */
function upTo(size: number, one: string, many: string): string {
  return size === 1 ? `the event 1 ${one}` : `the events 1–${size} ${many}`;
}
