/**
 * The monitor's checks, one run of them: that the organization's log only grows (the checkpoint the
 * service serves now extends the one the last run that passed verified: same size, the same root;
 * larger, the service's consistency proof, checked here), and that the installation log only grew (its
 * newest checkpoint signed and, with a policy, cosigned by a quorum; its tree rebuilt from the entries
 * since, on the right edge kept in the state), each checkpoint of the organization's log among its new
 * entries extending the one before. What it reads comes through a `MonitorSource`; the state file and
 * HTTP are the CLI's (`monitor`, src/cli/monitorCommand.ts).
 */
import { type Checkpoint, parseCheckpoint, toBase64 } from '../domain/ledger/formats';
import { leafHash, verifyConsistency } from '../domain/ledger/merkle';
import { openNote, type Verifier } from '../domain/ledger/note';
import { edgeRoot, extend, TILE_WIDTH } from '../domain/ledger/tiles';
import { parseEntryBundle } from '../domain/ledger/tilePaths';
import type { Policy } from '../domain/ledger/witnessFormats';
import { type RecordVerdict, type Verdict, verdictList } from './verdicts';
import { checkQuorum } from './witnessPolicy';

/** An organization checkpoint found in the installation log: its size, base64 root and entry index. */
export interface SeenEntry {
  size: number;
  root: string;
  entry: number;
}

/** What the monitor remembers between runs. */
export interface MonitorState {
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

/** What the monitor reads from the service (the CLI fetches it over HTTP). What a method throws fails the run, or, for the installation log's, is recorded. */
export interface MonitorSource {
  /** The organization's newest checkpoint, a signed note; null when the service has none (404). */
  organizationCheckpoint(): Promise<string | null>;
  /** The service's consistency proof from the tree of `from` to the tree of `to` (undefined: none came), and the HTTP status it came with. */
  consistency(from: number, to: number): Promise<{ proof: readonly Uint8Array[] | undefined; status: number }>;
  /** The installation log's newest checkpoint, a signed note. */
  installationCheckpoint(): Promise<string>;
  /** The installation log's entry bundle `index` (tlog-tiles), of `width` entries (partial below TILE_WIDTH). */
  entryBundle(index: number, width: number): Promise<Buffer>;
}

/** The state of a first run: nothing seen yet. */
export function firstMonitorState(): MonitorState {
  return { installation: { size: 0, root: '', edges: [] }, organization: null };
}

/**
 * One run of the monitor from `state` (what the last run that passed remembered): its summary, and the
 * state to remember, null unless the run passed.
 */
export async function monitorLog(source: MonitorSource, verifier: Verifier, state: MonitorState, policy: Policy | null): Promise<{ summary: MonitorSummary; next: MonitorState | null }> {
  const { verdicts, record, failures } = verdictList();
  const held = heldCheckpoint(state, verifier, record);

  // The organization's log as the service serves it now, against the checkpoint remembered from the last
  // run that passed: first, and whatever the installation log shows, so a rollback is always named.
  const current = await checkOrganization(source, verifier, held, record);
  const orgOrigin = current?.origin ?? held?.origin ?? null;

  let installation: Installation | null = null;
  let installationSize: number | null = null;
  try {
    ({ size: installationSize, found: installation } = await checkInstallation(source, policy, verifier, state, orgOrigin, record));
  } catch (error) {
    record(false, `the installation log: ${(error as Error).message}`);
  }
  // The newest checkpoint of the organization in the installation log and the one served now: one history.
  const newest = installation?.organization ?? null;
  if (current && newest && !(held && held.size === newest.size && toBase64(held.root) === newest.root)) {
    const seen = { size: newest.size, root: Buffer.from(newest.root, 'base64'), where: `in the installation log (entry ${newest.entry})`, served: false };
    await checkSameHistory(source, seen, current, record);
  }

  const failed = failures();
  const next: MonitorState | null = failed.length === 0 && installation && current
    ? { installation: installation.state, organization: installation.organization, checkpoint: { size: current.size, root: toBase64(current.root), note: current.note } }
    : null;
  return {
    summary: { ok: failed.length === 0, installation_size: installationSize, organization_size: current?.size ?? null, checkpoints_seen: installation?.seen ?? 0, failures: failed, verdicts },
    next,
  };
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
 * Reads the organization's newest checkpoint from the source, checks its signature and that it extends
 * the held one. Returns it once signed by the pinned key, else null (recorded). None (404), which is
 * what the service answers for a log with no checkpoint (never signed, or its ledger state deleted: the
 * service then halts the log rather than sign a new history), is recorded as a missing or halted log.
 */
async function checkOrganization(source: MonitorSource, verifier: Verifier, held: HeldCheckpoint | null, record: RecordVerdict): Promise<(Checkpoint & { note: string }) | null> {
  const note = await source.organizationCheckpoint();
  if (note === null) {
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
  if (held) await checkSameHistory(source, { size: held.size, root: held.root, where: 'this monitor saw before', served: true }, current, record);
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
async function checkSameHistory(source: MonitorSource, seen: Reference, current: Checkpoint, record: RecordVerdict): Promise<void> {
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
  const proof = await proveConsistent(source, older, newer);
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
async function proveConsistent(source: MonitorSource, older: { size: number; root: Uint8Array }, newer: { size: number; root: Uint8Array }): Promise<{ ok: boolean; status: number }> {
  const { proof, status } = await source.consistency(older.size, newer.size);
  return { ok: proof !== undefined && verifyConsistency(older.size, newer.size, proof, older.root, newer.root), status };
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
  source: MonitorSource,
  policy: Policy | null,
  verifier: Verifier,
  state: MonitorState,
  orgOrigin: string | null,
  record: RecordVerdict,
): Promise<{ size: number | null; found: Installation | null }> {
  let seen = 0;

  const note = await source.installationCheckpoint();
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
    const entries = parseEntryBundle(await source.entryBundle(bundleIndex, width)).map((entry) => entry.toString('utf8'));
    if (!record(entries.length === width, `entry bundle ${bundleIndex} holds ${width} entries`)) return failed;
    const fresh = entries.slice(size - bundleIndex * TILE_WIDTH);
    const extension = extend(size, edges, fresh.map((entry) => leafHash(entry)));
    for (const [i, entry] of fresh.entries()) {
      const [origin, entrySize, root] = entry.split('\n');
      if (orgOrigin === null || origin !== orgOrigin) continue;
      seen++;
      const current = { size: Number(entrySize), root: root as string, entry: size + i };
      if (organization) await checkExtends(source, organization, current, record);
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
async function checkExtends(source: MonitorSource, previous: SeenEntry, next: SeenEntry, record: RecordVerdict): Promise<void> {
  const what = `the organization's checkpoint of ${next.size} (installation entry ${next.entry}) extends the one of ${previous.size} (entry ${previous.entry})`;
  if (next.size < previous.size) {
    record(false, `${what}: it is SMALLER, the log was rolled back or wiped`);
    return;
  }
  if (next.size === previous.size) {
    record(next.root === previous.root, next.root === previous.root ? what : `${what}: same size, another root: the log was REWRITTEN`);
    return;
  }
  const proof = await proveConsistent(source, { size: previous.size, root: Buffer.from(previous.root, 'base64') }, { size: next.size, root: Buffer.from(next.root, 'base64') });
  record(proof.ok, proof.ok ? what : `${what}: no valid consistency proof (${proof.status}): the log was REWRITTEN`);
}
