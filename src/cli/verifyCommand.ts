/**
 * `cli verify`: checks a JSON export against its proofs sidecar offline, with nothing but the pinned
 * verifier key: the checkpoint's signature, each event's hash recomputed from the exported JSON and its
 * inclusion in the signed tree, that every proof has its event and every event its proof, and, against
 * the checkpoint a state file remembers, that the log only grew (fetching the consistency proof with
 * --url and --key). Prints a verdict per check; any failure makes the exit code 1.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { ZEvent } from '../domain/event';
import { eventSha256, leafBytes } from '../domain/ledger/eventHash';
import { leafHash, verifyConsistency, verifyInclusion } from '../domain/ledger/merkle';
import { type Checkpoint, parseCheckpoint } from '../domain/ledger/formats';
import { openNote, parseVerifierKey, type Verifier } from '../domain/ledger/note';
import { ZProofsSidecar } from '../domain/ledger/schemas';

export interface VerifyOptions {
  verifierKey: string;
  events: string;
  proofs: string;
  state: string | undefined;
  url: string | undefined;
  key: string | undefined;
}

export interface Verdict {
  ok: boolean;
  check: string;
}

export interface VerifySummary extends Record<string, unknown> {
  ok: boolean;
  tree_size: number | null;
  events: number;
  failures: string[];
  verdicts: Verdict[];
}

const b64 = (s: string) => Buffer.from(s, 'base64');

/** Export order: newest first by (timestamp, id), as the export writes it. */
function inExportOrder(a: { timestamp: string; id: string }, b: { timestamp: string; id: string }): boolean {
  return a.timestamp > b.timestamp || (a.timestamp === b.timestamp && a.id > b.id);
}

export async function runVerify(options: VerifyOptions): Promise<VerifySummary> {
  const verdicts: Verdict[] = [];
  const record = (ok: boolean, check: string) => {
    verdicts.push({ ok, check });
    return ok;
  };
  const summary = (treeSize: number | null, events: number): VerifySummary => {
    const failures = verdicts.filter((v) => !v.ok).map((v) => v.check);
    return { ok: failures.length === 0, tree_size: treeSize, events, failures, verdicts };
  };

  const verifier = parseVerifierKey(options.verifierKey);
  const sidecar = ZProofsSidecar.parse(JSON.parse(readFileSync(options.proofs, 'utf8')));
  const events = z.array(ZEvent).parse(JSON.parse(readFileSync(options.events, 'utf8')));

  let checkpoint: Checkpoint;
  try {
    checkpoint = parseCheckpoint(openNote(sidecar.checkpoint, verifier));
  } catch (error) {
    record(false, `checkpoint: not signed by ${verifier.name}: ${error instanceof Error ? error.message : String(error)}`);
    return summary(null, events.length);
  }
  record(checkpoint.size === sidecar.tree_size, `checkpoint of ${checkpoint.size} events signed by ${verifier.text}`);
  const prefix = `${verifier.name}/`;
  if (!record(checkpoint.origin.startsWith(prefix), `checkpoint origin ${checkpoint.origin} belongs to key ${verifier.name}`)) return summary(checkpoint.size, events.length);
  const org = checkpoint.origin.slice(prefix.length);

  const proofs = new Map(sidecar.proofs.map((p) => [p.event_id, p]));
  const leaves = new Map<number, string>();
  let failedEvents = 0;
  events.forEach((event, position) => {
    const proof = proofs.get(event.id);
    const previous = events[position - 1];
    if (previous && !inExportOrder(previous, event)) record(false, `event ${event.id}: out of the export's order (after ${previous.id})`);
    if (!proof) {
      failedEvents++;
      record(false, `event ${event.id}: no proof in the sidecar (an event added to the export?)`);
      return;
    }
    proofs.delete(event.id);
    if (!proof.inclusion_path) {
      failedEvents++;
      record(false, `event ${event.id}: stored after the checkpoint of ${checkpoint.size}, so not proven`);
      return;
    }
    const other = leaves.get(proof.leaf_index);
    if (other) record(false, `event ${event.id}: claims leaf ${proof.leaf_index}, as event ${other} does`);
    leaves.set(proof.leaf_index, event.id);
    const leaf = leafHash(leafBytes(org, proof.leaf_index + 1, eventSha256(event)));
    if (!verifyInclusion(proof.leaf_index, checkpoint.size, leaf, proof.inclusion_path.map(b64), checkpoint.root)) {
      failedEvents++;
      record(false, `event ${event.id}: not leaf ${proof.leaf_index} of the signed tree (changed, or moved from its place)`);
    }
  });
  for (const missing of proofs.keys()) record(false, `event ${missing}: proven in the sidecar but missing from the export (removed?)`);
  record(failedEvents === 0 && proofs.size === 0, `${events.length - failedEvents} of ${events.length} events are in the signed tree of ${checkpoint.size}`);

  if (options.state) await checkAgainstState(options, verifier, sidecar.checkpoint, checkpoint, record);
  return summary(checkpoint.size, events.length);
}

/** The state file: the newest checkpoint verified so far. The log may only have grown since. */
async function checkAgainstState(
  options: VerifyOptions,
  verifier: Verifier,
  note: string,
  checkpoint: Checkpoint,
  record: (ok: boolean, check: string) => boolean,
): Promise<void> {
  const path = options.state as string;
  if (existsSync(path)) {
    const saved = parseCheckpoint(openNote(readFileSync(path, 'utf8'), verifier));
    const [older, newer] = saved.size <= checkpoint.size ? [saved, checkpoint] : [checkpoint, saved];
    if (older.size === newer.size) {
      record(Buffer.from(older.root).equals(newer.root), `the checkpoint of ${newer.size} is the one remembered in ${path}`);
    } else {
      if (!options.url || !options.key) {
        record(false, `consistency with the remembered checkpoint of ${saved.size}: needs --url and --key to fetch the proof`);
        return;
      }
      const url = new URL(`/v1/ledger/consistency?from=${older.size}&to=${newer.size}`, options.url);
      const response = await fetch(url, { headers: { authorization: `Bearer ${options.key}` } });
      const body = (await response.json()) as { proof?: string[] };
      const consistent = response.ok && Array.isArray(body.proof) && verifyConsistency(older.size, newer.size, body.proof.map(b64), older.root, newer.root);
      record(consistent, `the log of ${newer.size} extends the one of ${older.size} remembered before (nothing rewritten)`);
      if (!consistent) return;
    }
    if (saved.size >= checkpoint.size) return;
  }
  writeFileSync(`${path}.tmp`, note);
  renameSync(`${path}.tmp`, path);
}
