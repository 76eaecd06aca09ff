/**
 * `cli verify`: checks a JSON export against its proofs sidecar offline, with nothing but the pinned
 * verifier key: the checkpoint's signature, each event's hash recomputed from the exported JSON and its
 * inclusion in the signed tree, that every proof has its event and every event its proof, and, against
 * the checkpoint a state file remembers, that the log only grew (fetching the consistency proof with
 * --url and --key). Prints a verdict per check; any failure makes the exit code 1. The checks are the
 * client's (src/client/exportCheck.ts, witnessPolicy.ts); here, the files and the fetch.
 */
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { type Checkpoint, parseCheckpoint } from '../domain/ledger/formats';
import { openNote, parseVerifierKey, type Verifier } from '../domain/ledger/note';
import { ZProofsSidecar } from '../domain/ledger/schemas';
import { parsePolicy } from '../domain/ledger/witnessFormats';
import { checkProducerSignatures } from '../client/producerCheck';
import { checkExport, checkRemembered, type FetchProof, isWholeLog } from '../client/exportCheck';
import { type RecordVerdict, type Verdict, verdictList } from '../client/verdicts';
import { checkWitnessed } from '../client/witnessPolicy';
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
  /** Pinned producer bindings (API key id → producer verifier key): the log must agree. */
  producers?: ReadonlyMap<string, string>;
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

export async function runVerify(options: VerifyOptions): Promise<VerifySummary> {
  const { verdicts, record, failures } = verdictList();
  const verifier = parseVerifierKey(options.verifierKey);
  // Every input is read before anything is checked or written: a file that cannot be read fails the run
  // at once, with nothing remembered in --state.
  const parsedSidecar = ZProofsSidecar.safeParse(readJsonOptionFile(options.proofs, 'proofs', 'the .proofs.json file that export --with-proofs wrote'));
  if (!parsedSidecar.success) throw new CliFailure(`Cannot read ${options.proofs} (--proofs): it is not a proofs sidecar; give the .proofs.json file that export --with-proofs wrote`);
  const sidecar = parsedSidecar.data;
  const items: unknown = readJsonOptionFile(options.events, 'events', 'the JSON file that export --format json wrote');
  const policyText = options.policy === undefined ? null : readOptionFile(options.policy, 'policy');
  let witnesses: string[] | null = null;
  const summary = (treeSize: number | null, events: number): VerifySummary => {
    const failed = failures();
    return { ok: failed.length === 0, tree_size: treeSize, events, scope: isWholeLog(sidecar.filters) ? 'complete' : 'inclusion', filters: sidecar.filters, failures: failed, verdicts, witnesses };
  };

  const found = checkExport(verifier, sidecar, items, record);
  const checkpoint = found.checkpoint;
  if (!checkpoint) return summary(found.treeSize, found.events);
  await checkProducerSignatures(found.proven, isWholeLog(sidecar.filters), record, options.producers);
  const remember = options.state ? await checkAgainstState(options, verifier, checkpoint, record) : false;
  if (policyText !== null) witnesses = checkWitnessed(parsePolicy(policyText), verifier, sidecar.checkpoint, sidecar.installation ?? null, record);
  const result = summary(checkpoint.size, found.events);
  // Only a run that verified everything moves the remembered checkpoint on.
  if (remember && result.ok && options.state) saveCheckpoint(options.state, sidecar.checkpoint);
  return result;
}

/**
 * The state file: the newest checkpoint verified so far. The log may only have grown since. Returns
 * whether the checkpoint verified now is newer than the one remembered (to be saved if the run passes).
 */
async function checkAgainstState(options: VerifyOptions, verifier: Verifier, checkpoint: Checkpoint, record: RecordVerdict): Promise<boolean> {
  const path = options.state as string;
  if (!existsSync(path)) return true;
  let saved: Checkpoint;
  try {
    saved = parseCheckpoint(openNote(readOptionFile(path, 'state'), verifier));
  } catch (error) {
    if (error instanceof CliFailure) throw error;
    throw new CliFailure(`Cannot read ${path} (--state): it is not a checkpoint signed by ${verifier.name} (${error instanceof Error ? error.message : String(error)}); give the file an earlier verify with this key wrote`);
  }
  const { url, key } = options;
  const fetchProof: FetchProof | null = url && key
    ? async (from, to) => {
      const response = await fetch(new URL(`/v1/ledger/consistency?from=${from}&to=${to}`, url), { headers: { authorization: `Bearer ${key}` } });
      if (response.status === 401 || response.status === 403) throw httpFailure('give the consistency proof', response.status, await response.text());
      const body = (await response.json()) as { proof?: string[] };
      return response.ok && Array.isArray(body.proof) ? body.proof.map((h) => Buffer.from(h, 'base64')) : null;
    }
    : null;
  return checkRemembered(saved, checkpoint, path, fetchProof, record);
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
