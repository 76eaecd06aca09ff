/**
 * `monitor`: what a customer runs (from cron, say) to hold the operator to one history of their
 * organization's log. It remembers, in its state file, the organization's newest checkpoint it verified
 * and checks on every run that the one the service serves now extends it (same size: the same root;
 * larger: the service's consistency proof, checked here): a log rolled back, rewritten, wiped or halted
 * fails the run, even when none of it reaches the installation log. It also reads the installation log
 * through its tlog-tiles API, checks its newest checkpoint's signature and, with a policy, its
 * witnesses' quorum, proves that the installation log only grew since the last run (its tree rebuilt
 * from the entries since, on the right edge kept in the state file), and checks that every checkpoint of
 * the organization's log among the new entries extends the one before it. A rewritten or wiped
 * organization log cannot hide: its new checkpoints must enter the witnessed installation log to be
 * accepted by `verify --policy`, and there the monitor meets them. The state is replaced (atomically)
 * only by a run that passes, so a failing run never forgets what the service must extend.
 */
import { closeSync, existsSync, fsyncSync, openSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Checkpoint, fromBase64, parseCheckpoint, toBase64 } from '../domain/ledger/formats';
import { leafHash, verifyConsistency } from '../domain/ledger/merkle';
import { openNote, parseVerifierKey, type Verifier } from '../domain/ledger/note';
import { edgeRoot, extend, TILE_WIDTH } from '../domain/ledger/tiles';
import { parseEntryBundle, tileIndexPath } from '../domain/ledger/tilePaths';
import { parsePolicy, type Policy } from '../domain/ledger/witnessFormats';
import { CliFailure, readOptionFile } from './failure';
import { checkQuorum, type Verdict } from './verifyCommand';

export interface MonitorOptions {
  url: string;
  key: string;
  verifierKey: string;
  state: string;
  policy: string | undefined;
  installationToken: string | undefined;
}

/** An organization checkpoint found in the installation log: its size, base64 root and entry index. */
interface SeenEntry {
  size: number;
  root: string;
  entry: number;
}

/** What the monitor remembers between runs. */
interface MonitorState {
  installation: { size: number; root: string; edges: string[][] };
  /** The organization's newest checkpoint seen in the installation log (size and base64 root), or null. */
  organization: SeenEntry | null;
  /**
   * The organization's newest checkpoint the monitor verified as the service served it (size, base64
   * root and the signed note): the next run's must extend it. Absent from a state written before it was kept.
   */
  checkpoint?: { size: number; root: string; note: string } | null;
}

/** An organization checkpoint the monitor holds: its origin (null when a state file from before did not keep it), size and root. */
interface HeldCheckpoint {
  origin: string | null;
  size: number;
  root: Uint8Array;
}

export interface MonitorSummary extends Record<string, unknown> {
  ok: boolean;
  installation_size: number | null;
  /** The size of the organization's checkpoint the service serves now (null: none, or not verified). */
  organization_size: number | null;
  checkpoints_seen: number;
  failures: string[];
  verdicts: Verdict[];
}

/** Records one verdict of the run; returns `ok`. */
type RecordVerdict = (ok: boolean, check: string) => boolean;

export async function runMonitor(options: MonitorOptions): Promise<MonitorSummary> {
  const verdicts: Verdict[] = [];
  const record = (ok: boolean, check: string) => {
    verdicts.push({ ok, check });
    return ok;
  };
  const verifier = parseVerifierKey(options.verifierKey);
  const base = options.url.replace(/\/+$/, '');
  // The files first: one that cannot be read fails the run before anything is fetched or written.
  const policy = options.policy === undefined ? null : parsePolicy(readOptionFile(options.policy, 'policy'));
  const state: MonitorState = existsSync(options.state) ? readState(options.state) : { installation: { size: 0, root: '', edges: [] }, organization: null };
  const held = heldCheckpoint(state, verifier, record);

  // The organization's log as the service serves it now, against the checkpoint remembered from the last
  // run that passed: first, and whatever the installation log shows, so a rollback is always named.
  const current = await checkOrganization(base, options.key, verifier, held, record);
  const orgOrigin = current?.origin ?? held?.origin ?? null;

  let installation: Installation | null = null;
  let installationSize: number | null = null;
  try {
    ({ size: installationSize, found: installation } = await checkInstallation(base, options, policy, verifier, state, orgOrigin, record));
  } catch (error) {
    record(false, `the installation log: ${(error as Error).message}`);
  }
  // The newest checkpoint of the organization in the installation log and the one served now: one history.
  const newest = installation?.organization ?? null;
  if (current && newest && !(held && held.size === newest.size && toBase64(held.root) === newest.root)) {
    const seen = { size: newest.size, root: Buffer.from(newest.root, 'base64'), where: `in the installation log (entry ${newest.entry})`, served: false };
    await checkSameHistory(base, options.key, seen, current, record);
  }

  const failures = verdicts.filter((v) => !v.ok).map((v) => v.check);
  if (failures.length === 0 && installation && current) {
    const next: MonitorState = {
      installation: installation.state,
      organization: installation.organization,
      checkpoint: { size: current.size, root: toBase64(current.root), note: current.note },
    };
    writeState(options.state, next);
  }
  return { ok: failures.length === 0, installation_size: installationSize, organization_size: current?.size ?? null, checkpoints_seen: installation?.seen ?? 0, failures, verdicts };
}

/** The state file an earlier run wrote, or a CliFailure saying it is not one. */
function readState(path: string): MonitorState {
  const text = readOptionFile(path, 'state');
  try {
    return JSON.parse(text) as MonitorState;
  } catch {
    throw new CliFailure(`Cannot read ${path} (--state): it is not a state file this command wrote; give the file an earlier monitor run wrote, or a new path`);
  }
}

/** Replaces the state file atomically: written beside it, fsynced, renamed over it, the directory fsynced. */
function writeState(path: string, state: MonitorState): void {
  const temporary = `${path}.${process.pid}.tmp`;
  const fd = openSync(temporary, 'w', 0o600);
  try {
    writeFileSync(fd, `${JSON.stringify(state)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

/**
 * The organization checkpoint the state file remembers: the one verified from the service (its note
 * checked again with the pinned key), or, in a state file from before it was kept, the newest seen in
 * the installation log. Null on a first run.
 */
function heldCheckpoint(state: MonitorState, verifier: Verifier, record: RecordVerdict): HeldCheckpoint | null {
  if (state.checkpoint) {
    try {
      const saved = parseCheckpoint(openNote(state.checkpoint.note, verifier));
      return { origin: saved.origin, size: saved.size, root: saved.root };
    } catch (error) {
      record(false, `the state file's organization checkpoint: not signed by ${verifier.name}: ${(error as Error).message}`);
      return null;
    }
  }
  return state.organization ? { origin: null, size: state.organization.size, root: Buffer.from(state.organization.root, 'base64') } : null;
}

/**
 * Fetches the organization's newest checkpoint (tlog-tiles, its key as bearer), checks its signature and
 * that it extends the held one. Returns it once signed by the pinned key, else null (recorded). A 404,
 * which is what the service answers for a log with no checkpoint (never signed, or its ledger state
 * deleted: the service then halts the log rather than sign a new history), is recorded as a missing or
 * halted log.
 */
async function checkOrganization(base: string, key: string, verifier: Verifier, held: HeldCheckpoint | null, record: RecordVerdict): Promise<(Checkpoint & { note: string }) | null> {
  const path = '/v1/ledger/log/checkpoint';
  const response = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
  if (response.status === 404) {
    if (!held) {
      record(false, 'the organization\'s log has no checkpoint (404): no event of it was signed yet, or its log is missing or halted; nothing to monitor until the service serves one');
    } else {
      record(
        false,
        `the organization's log${held.origin ? ` ${held.origin}` : ''} is MISSING or HALTED: the service has no checkpoint of it (404), where this monitor last saw one of ${held.size} events (root ${toBase64(held.root)}): its ledger state was deleted, wiped or rolled back, and the service halts such a log until an operator's \`ledger reseal\``,
      );
    }
    return null;
  }
  if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await errorMessage(response)}`.trimEnd());
  const note = await response.text();
  let current: Checkpoint;
  try {
    current = parseCheckpoint(openNote(note, verifier));
  } catch (error) {
    record(false, `the organization's checkpoint: not signed by ${verifier.name}: ${(error as Error).message}`);
    return null;
  }
  const ownLog = current.origin.startsWith(`${verifier.name}/`) && current.origin !== `${verifier.name}/installation`;
  if (!record(ownLog, `the organization's checkpoint ${current.origin} of ${current.size} events signed by ${verifier.name}`)) return null;
  if (held?.origin && held.origin !== current.origin) {
    record(false, `the organization's log ${current.origin} is not the one this state file follows (${held.origin}): another organization's key?`);
    return null;
  }
  if (held) await checkSameHistory(base, key, { size: held.size, root: held.root, where: 'this monitor saw before', served: true }, current, record);
  return { ...current, note };
}

/** A checkpoint of the organization's log the monitor saw before, and how the verdicts name it. */
interface Reference {
  size: number;
  root: Uint8Array;
  /** `this monitor saw before`, `in the installation log (entry 12)`. */
  where: string;
  /** Whether a smaller current checkpoint is a rollback outright (the monitor verified this one from the service itself). */
  served: boolean;
}

/**
 * Records whether `current` (the organization's checkpoint served now) and a checkpoint seen before are
 * of one history: same size, same root; otherwise the smaller proven a prefix of the larger by the
 * service's consistency proof, checked here. Smaller than what the monitor verified from the service
 * before is a rollback; smaller than the newest in the installation log only if it is no prefix of it
 * (a run may meet there a checkpoint signed after it fetched the current one).
 */
async function checkSameHistory(base: string, key: string, seen: Reference, current: Checkpoint, record: RecordVerdict): Promise<void> {
  const what = `the organization's checkpoint of ${current.size} events`;
  if (current.size === seen.size) {
    const same = Buffer.from(current.root).equals(Buffer.from(seen.root));
    record(same, same ? `${what} is the one ${seen.where}` : `${what} has another root than the one of the same size ${seen.where}: a FORK, the log was ROLLED BACK and rewritten`);
    return;
  }
  if (current.size < seen.size && seen.served) {
    record(false, `${what} is SMALLER than the one of ${seen.size} ${seen.where}: the log was ROLLED BACK`);
    return;
  }
  const [older, newer] = current.size < seen.size ? [current, seen] : [seen, current];
  const proof = await proveConsistent(base, key, older, newer);
  if (current.size > seen.size) {
    record(
      proof.ok,
      proof.ok
        ? `${what} extends the one of ${seen.size} ${seen.where} (consistency proof checked)`
        : `${what} is not consistent with the one of ${seen.size} ${seen.where} (no valid consistency proof, ${proof.status}): the log was ROLLED BACK and rewritten`,
    );
  } else {
    record(
      proof.ok,
      proof.ok
        ? `${what} is a prefix of the one of ${seen.size} ${seen.where} (consistency proof checked)`
        : `${what} is SMALLER than the one of ${seen.size} ${seen.where}, and no prefix of it (no valid consistency proof, ${proof.status}): the log was ROLLED BACK`,
    );
  }
}

/** The service's consistency proof from `older` to `newer` (their sizes and roots), checked here; and its HTTP status. */
async function proveConsistent(base: string, key: string, older: { size: number; root: Uint8Array }, newer: { size: number; root: Uint8Array }): Promise<{ ok: boolean; status: number }> {
  const response = await fetch(`${base}/v1/ledger/consistency?from=${older.size}&to=${newer.size}`, { headers: { authorization: `Bearer ${key}` } });
  const body = response.ok ? ((await response.json()) as { proof?: unknown }) : null;
  const proof = Array.isArray(body?.proof) ? (body.proof as unknown[]).map((h) => (typeof h === 'string' ? fromBase64(h) : null) ?? new Uint8Array()) : undefined;
  return { ok: proof !== undefined && verifyConsistency(older.size, newer.size, proof, older.root, newer.root), status: response.status };
}

/** The message of a service's JSON error answer, or its text. */
async function errorMessage(response: Response): Promise<string> {
  const text = await response.text();
  try {
    const message = (JSON.parse(text) as { message?: unknown }).message;
    return typeof message === 'string' ? message : text;
  } catch {
    return text;
  }
}

/** What the installation log's part of a run found: the state to keep, the organization's newest checkpoint in it, how many of its checkpoints the run met. */
interface Installation {
  state: MonitorState['installation'];
  organization: SeenEntry | null;
  seen: number;
}

/**
 * The installation log: its newest checkpoint signed (and cosigned, with a policy), grown from the one
 * the state remembers (the entries since, hashed onto the kept right edge, give its root), and each
 * checkpoint of `orgOrigin` among the new entries extending the one before. `found` is null when it
 * stopped at a failed check; `size` is the signed installation tree's, once its signature checked out.
 */
async function checkInstallation(
  base: string,
  options: MonitorOptions,
  policy: Policy | null,
  verifier: Verifier,
  state: MonitorState,
  orgOrigin: string | null,
  record: RecordVerdict,
): Promise<{ size: number | null; found: Installation | null }> {
  const installationHeaders: Record<string, string> = options.installationToken ? { authorization: `Bearer ${options.installationToken}` } : {};
  const fetchOk = async (path: string, headers: Record<string, string>): Promise<Response> => {
    const response = await fetch(`${base}${path}`, { headers });
    if (!response.ok) throw new Error(`GET ${path}: ${response.status}`);
    return response;
  };
  let seen = 0;

  const note = await (await fetchOk('/v1/ledger/installation/checkpoint', installationHeaders)).text();
  let tree;
  try {
    tree = parseCheckpoint(openNote(note, verifier));
  } catch (error) {
    record(false, `installation checkpoint: not signed by ${verifier.name}: ${(error as Error).message}`);
    return { size: null, found: null };
  }
  const failed = { size: tree.size, found: null };
  if (!record(tree.origin === `${verifier.name}/installation`, `installation checkpoint ${tree.origin} of ${tree.size} entries signed by ${verifier.name}`)) return failed;
  if (policy) checkQuorum(note, policy, record);

  const from = state.installation.size;
  if (!record(tree.size >= from, `the installation log has ${tree.size} entries, at least the ${from} seen before`)) return failed;

  // The entries since the last run, hashed onto the right edge kept from it: the new root must be the signed one.
  let edges: Buffer[][] = state.installation.edges.map((level) => level.map((h) => Buffer.from(h, 'base64')));
  let size = from;
  let organization = state.organization;
  while (size < tree.size) {
    const bundleIndex = Math.floor(size / TILE_WIDTH);
    const width = Math.min(TILE_WIDTH, tree.size - bundleIndex * TILE_WIDTH);
    const path = `/v1/ledger/installation/tile/entries/${tileIndexPath(bundleIndex)}${width < TILE_WIDTH ? `.p/${width}` : ''}`;
    const entries = parseEntryBundle(Buffer.from(await (await fetchOk(path, installationHeaders)).arrayBuffer())).map((entry) => entry.toString('utf8'));
    if (!record(entries.length === width, `entry bundle ${bundleIndex} holds ${width} entries`)) return failed;
    const fresh = entries.slice(size - bundleIndex * TILE_WIDTH);
    const extension = extend(size, edges, fresh.map((entry) => leafHash(entry)));
    for (const [i, entry] of fresh.entries()) {
      const [origin, entrySize, root] = entry.split('\n');
      if (orgOrigin === null || origin !== orgOrigin) continue;
      seen++;
      const current = { size: Number(entrySize), root: root as string, entry: size + i };
      if (organization) await checkExtends(base, options.key, organization, current, record);
      organization = current;
    }
    edges = extension.edges;
    size = extension.size;
  }
  const rebuilt = size === 0 ? null : edgeRoot(edges);
  if (size > 0 && !record(rebuilt !== null && rebuilt.equals(Buffer.from(tree.root)), `the installation log's entries since ${from} give the signed root of ${tree.size}: it only grew`)) return failed;
  if (from === tree.size && state.installation.root) record(state.installation.root === toBase64(tree.root), `the installation checkpoint of ${tree.size} is the one seen before`);
  if (orgOrigin !== null) {
    record(
      organization !== null,
      organization ? `the organization's log ${orgOrigin}: its checkpoints in the installation log each extend the one before (newest: ${organization.size} events, entry ${organization.entry})` : `no checkpoint of ${orgOrigin} in the installation log yet`,
    );
  }
  const found = { state: { size: tree.size, root: toBase64(tree.root), edges: edges.map((level) => level.map((h) => h.toString('base64'))) }, organization, seen };
  return { size: tree.size, found };
}

/** That the organization's checkpoint `next` extends `previous`: the service's consistency proof, checked here. */
async function checkExtends(base: string, key: string, previous: SeenEntry, next: SeenEntry, record: RecordVerdict): Promise<void> {
  const what = `the organization's checkpoint of ${next.size} (installation entry ${next.entry}) extends the one of ${previous.size} (entry ${previous.entry})`;
  if (next.size < previous.size) {
    record(false, `${what}: it is SMALLER, the log was rolled back or wiped`);
    return;
  }
  if (next.size === previous.size) {
    record(next.root === previous.root, next.root === previous.root ? what : `${what}: same size, another root: the log was REWRITTEN`);
    return;
  }
  const proof = await proveConsistent(base, key, { size: previous.size, root: Buffer.from(previous.root, 'base64') }, { size: next.size, root: Buffer.from(next.root, 'base64') });
  record(proof.ok, proof.ok ? what : `${what}: no valid consistency proof (${proof.status}): the log was REWRITTEN`);
}
