/**
 * `cli stream verify`: checks what a log stream delivered, offline, with nothing but the pinned verifier
 * key: a directory of delivered objects (an S3 stream's `.jsonl.gz` objects as downloaded, or `.jsonl`
 * files a webhook receiver wrote: one item per line, and the batch's `audit_ledger_checkpoint` line).
 *
 * Each event's hash is recomputed from the delivered JSON and must be its receipt's; the sequence
 * numbers must run without a gap (a repeat must be the same event), except where a delivered retention
 * entry removed events before the stream reached them; every checkpoint must be signed by
 * the key for one organization's log; and, when the stream started at the first event, the Merkle root
 * of the delivered events must be the root of every checkpoint they reach. That last check proves the
 * delivered events are exactly the log's leaves 1…N, in order, nothing missing, nothing added.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { ZEvent } from '../domain/event';
import { hashInputOfEvent } from '../domain/eventFields';
import { eventHashes, eventLeafHash, leafCommitOf } from '../domain/ledger/eventHash';
import { type LeafCommit, saltBytes } from '../domain/ledger/formats';
import { checkRetention, type LogEntry, logEntryOf } from '../domain/retention';
import { parseCheckpoint, toBase64 } from '../domain/ledger/formats';
import { nodesOf, rootHash } from '../domain/ledger/merkle';
import { openNote, parseVerifierKey } from '../domain/ledger/note';
import type { Verdict } from './verifyCommand';

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

/** Every delivered file under `dir`, in key order (an S3 stream's keys sort by date, then sequence). */
function deliveredFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && /\.jsonl(\.gz)?$/.test(entry.name)) out.push(join(entry.parentPath, entry.name));
  }
  return out.sort();
}

function linesOf(path: string): string[] {
  const raw = readFileSync(path);
  const text = path.endsWith('.gz') ? gunzipSync(raw).toString('utf8') : raw.toString('utf8');
  return text.split('\n').filter((line) => line.trim() !== '');
}

/** The event and receipt of a delivered item, in either format; null for anything else. */
function itemOf(value: Record<string, unknown>): { event: unknown; receipt: { leaf_index: number; event_sha256: string; event_commitment?: string; salt?: string } } | null {
  const source = (value.class_uid === 6003 ? value.unmapped : value) as { event?: unknown; receipt?: Record<string, unknown> } | undefined;
  const receipt = source?.receipt;
  if (!source?.event || typeof receipt?.leaf_index !== 'number' || typeof receipt.event_sha256 !== 'string') return null;
  const { salt, event_commitment: commitment } = receipt;
  if (salt !== undefined && (typeof salt !== 'string' || !saltBytes(salt) || typeof commitment !== 'string')) return null;
  return { event: source.event, receipt: { leaf_index: receipt.leaf_index, event_sha256: receipt.event_sha256, ...(typeof salt === 'string' ? { salt, event_commitment: commitment as string } : {}) } };
}

export async function runVerifyStream(options: { verifierKey: string; dir: string; checkpoint?: string | undefined }): Promise<StreamVerifySummary> {
  const verifier = parseVerifierKey(options.verifierKey);
  const verdicts: Verdict[] = [];
  const failures: string[] = [];
  const record = (ok: boolean, check: string) => {
    verdicts.push({ ok, check });
    if (!ok) failures.push(check);
    return ok;
  };
  const hashes = new Map<number, LeafCommit>();
  /** Retention entries among the delivered events: they account for events a stream skips (removed before it got there). */
  const retention: LogEntry[] = [];
  let organization: string | null = null;
  const checkpoints = new Map<number, string>();
  let repeats = 0;
  let bad = 0;
  const files = deliveredFiles(options.dir);
  record(files.length > 0, `${files.length} delivered file(s) under ${options.dir}`);
  for (const file of files) {
    for (const [n, line] of linesOf(file).entries()) {
      const where = `${file}:${n + 1}`;
      let value: Record<string, unknown>;
      try {
        value = JSON.parse(line) as Record<string, unknown>;
      } catch {
        bad++;
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
        bad++;
        record(false, `${where}: not an event with its receipt`);
        continue;
      }
      const seq = item.receipt.leaf_index + 1;
      // The leaf commits to what is computed here, from the event and (v2) its salt: never to the receipt's word.
      const computed = eventHashes(hashInputOfEvent(event.data), item.receipt.salt);
      const hash = leafCommitOf(computed);
      if (computed.event_sha256 !== item.receipt.event_sha256 || computed.event_commitment !== item.receipt.event_commitment) {
        bad++;
        record(false, `${where}: event ${event.data.id} at sequence number ${seq} does not hash to its receipt (changed)`);
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
  if (options.checkpoint) {
    try {
      const signed = parseCheckpoint(openNote(readFileSync(options.checkpoint, 'utf8'), verifier));
      const seen = checkpoints.get(signed.size);
      if (seen !== undefined && seen !== toBase64(signed.root)) record(false, `the given checkpoint of size ${signed.size} differs from the delivered one: a forked log`);
      checkpoints.set(signed.size, toBase64(signed.root));
      required = signed.size;
    } catch (error) {
      record(false, `the given checkpoint is not signed by ${verifier.name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const seqs = [...hashes.keys()].sort((a, b) => a - b);
  const first = seqs[0] ?? null;
  const last = seqs.at(-1) ?? null;
  let verifiedSize = 0;
  if (first !== null && last !== null) {
    // A gap is allowed only where a delivered retention entry removed the events (pruned or erased).
    const authority = checkRetention(retention.sort((a, b) => a.seq - b.seq));
    for (const problem of authority.problems) record(false, problem);
    let missing = 0;
    let removed = 0;
    for (let seq = first; seq <= last; seq++) {
      if (hashes.has(seq)) continue;
      if (authority.authority(seq)) removed++;
      else missing++;
    }
    const removedNote = removed ? `; ${removed} removed under retention entries of the log, skipped` : '';
    record(missing === 0 && bad === 0, missing === 0 ? `${seqs.length} events, sequence numbers ${first}–${last} without a gap (${repeats} delivered again${removedNote})` : `${missing} sequence number(s) between ${first} and ${last} were never delivered, and no retention entry removed them`);
    if (organization === null) record(false, 'no signed checkpoint was delivered');
    else if (removed > 0) {
      verdicts.push({ ok: true, check: `events were removed under retention before the stream reached them: the checkpoints' roots cannot be recomputed without their leaves (check those with export --with-proofs)` });
    } else if (first !== 1) {
      verdicts.push({ ok: true, check: `the stream started at sequence number ${first}: the checkpoints' roots cannot be recomputed without the events before it (check those with export --with-proofs)` });
    } else if (missing === 0) {
      const leaves = seqs.map((seq) => eventLeafHash(organization, seq, hashes.get(seq) as LeafCommit));
      const nodes = nodesOf(leaves);
      for (const [size, root] of [...checkpoints].sort((a, b) => a[0] - b[0])) {
        if (size > last) continue;
        const ok = toBase64(await rootHash(nodes, size)) === root;
        record(ok, ok ? `the events 1–${size} reproduce the signed checkpoint of size ${size}` : `the events 1–${size} do not reproduce the signed checkpoint of size ${size}: not the log's leaves`);
        if (ok) verifiedSize = size;
      }
      if (verifiedSize === 0) record(false, 'no delivered checkpoint is covered by the delivered events');
      else if (verifiedSize < last) verdicts.push({ ok: true, check: `events ${verifiedSize + 1}–${last} are hashed and in order; the checkpoints delivered with them reach further than the delivery so far` });
    }
  }
  if (required > 0) record(verifiedSize >= required, verifiedSize >= required ? `the delivery reaches the given checkpoint of size ${required}` : `the delivery stops before the given checkpoint of size ${required} (verified up to ${verifiedSize}): events are missing from its end`);
  return { ok: failures.length === 0, organization, events: seqs.length, repeats, first_seq: first, last_seq: last, verified_size: verifiedSize, failures, verdicts };
}
