/**
 * `monitor`: what a customer runs (from cron, say) to hold the operator to one history of their
 * organization's log. It reads the installation log through its tlog-tiles API, checks its newest
 * checkpoint's signature and, with a policy, its witnesses' quorum, proves that the installation log
 * only grew since the last run (its tree rebuilt from the entries since, on the right edge kept in the
 * state file), and checks that every checkpoint of the organization's log among the new entries
 * extends the one before it (the service's consistency proof, checked here). A rewritten or wiped
 * organization log cannot hide: its new checkpoints must enter the witnessed installation log to be
 * accepted by `verify --policy`, and there the monitor meets them.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { fromBase64, parseCheckpoint, toBase64 } from '../domain/ledger/formats';
import { leafHash, verifyConsistency } from '../domain/ledger/merkle';
import { openNote, parseVerifierKey } from '../domain/ledger/note';
import { edgeRoot, extend, TILE_WIDTH } from '../domain/ledger/tiles';
import { parseEntryBundle, tileIndexPath } from '../domain/ledger/tilePaths';
import { parsePolicy } from '../domain/ledger/witnessFormats';
import { checkQuorum, type Verdict } from './verifyCommand';

export interface MonitorOptions {
  url: string;
  key: string;
  verifierKey: string;
  state: string;
  policy: string | undefined;
  installationToken: string | undefined;
}

/** What the monitor remembers between runs. */
interface MonitorState {
  installation: { size: number; root: string; edges: string[][] };
  /** The organization's newest checkpoint seen in the installation log (size and base64 root), or null. */
  organization: { size: number; root: string; entry: number } | null;
}

export interface MonitorSummary extends Record<string, unknown> {
  ok: boolean;
  installation_size: number | null;
  checkpoints_seen: number;
  failures: string[];
  verdicts: Verdict[];
}

export async function runMonitor(options: MonitorOptions): Promise<MonitorSummary> {
  const verdicts: Verdict[] = [];
  const record = (ok: boolean, check: string) => {
    verdicts.push({ ok, check });
    return ok;
  };
  const verifier = parseVerifierKey(options.verifierKey);
  const base = options.url.replace(/\/+$/, '');
  const installationHeaders: Record<string, string> = options.installationToken ? { authorization: `Bearer ${options.installationToken}` } : {};
  const fetchOk = async (path: string, headers: Record<string, string>): Promise<Response> => {
    const response = await fetch(`${base}${path}`, { headers });
    if (!response.ok) throw new Error(`GET ${path}: ${response.status}`);
    return response;
  };
  let seen = 0;
  const summary = (size: number | null): MonitorSummary => {
    const failures = verdicts.filter((v) => !v.ok).map((v) => v.check);
    return { ok: failures.length === 0, installation_size: size, checkpoints_seen: seen, failures, verdicts };
  };

  const note = await (await fetchOk('/v1/ledger/installation/checkpoint', installationHeaders)).text();
  let tree;
  try {
    tree = parseCheckpoint(openNote(note, verifier));
  } catch (error) {
    record(false, `installation checkpoint: not signed by ${verifier.name}: ${(error as Error).message}`);
    return summary(null);
  }
  if (!record(tree.origin === `${verifier.name}/installation`, `installation checkpoint ${tree.origin} of ${tree.size} entries signed by ${verifier.name}`)) return summary(tree.size);
  if (options.policy) {
    checkQuorum(note, parsePolicy(readFileSync(options.policy, 'utf8')), record);
  }

  const state: MonitorState = existsSync(options.state)
    ? (JSON.parse(readFileSync(options.state, 'utf8')) as MonitorState)
    : { installation: { size: 0, root: '', edges: [] }, organization: null };
  const from = state.installation.size;
  if (!record(tree.size >= from, `the installation log has ${tree.size} entries, at least the ${from} seen before`)) return summary(tree.size);

  // The entries since the last run, hashed onto the right edge kept from it: the new root must be the signed one.
  const orgOrigin = `${verifier.name}/${await organizationId(base, options.key)}`;
  let edges: Buffer[][] = state.installation.edges.map((level) => level.map((h) => Buffer.from(h, 'base64')));
  let size = from;
  let organization = state.organization;
  while (size < tree.size) {
    const bundleIndex = Math.floor(size / TILE_WIDTH);
    const width = Math.min(TILE_WIDTH, tree.size - bundleIndex * TILE_WIDTH);
    const path = `/v1/ledger/installation/tile/entries/${tileIndexPath(bundleIndex)}${width < TILE_WIDTH ? `.p/${width}` : ''}`;
    const entries = parseEntryBundle(Buffer.from(await (await fetchOk(path, installationHeaders)).arrayBuffer())).map((entry) => entry.toString('utf8'));
    if (!record(entries.length === width, `entry bundle ${bundleIndex} holds ${width} entries`)) return summary(tree.size);
    const fresh = entries.slice(size - bundleIndex * TILE_WIDTH);
    const extension = extend(size, edges, fresh.map((entry) => leafHash(entry)));
    for (const [i, entry] of fresh.entries()) {
      const [origin, entrySize, root] = entry.split('\n');
      if (origin !== orgOrigin) continue;
      seen++;
      const current = { size: Number(entrySize), root: root as string, entry: size + i };
      if (organization) await checkExtends(base, options.key, organization, current, record);
      organization = current;
    }
    edges = extension.edges;
    size = extension.size;
  }
  const rebuilt = size === 0 ? null : edgeRoot(edges);
  if (size > 0 && !record(rebuilt !== null && rebuilt.equals(Buffer.from(tree.root)), `the installation log's entries since ${from} give the signed root of ${tree.size}: it only grew`)) return summary(tree.size);
  if (from === tree.size && state.installation.root) record(state.installation.root === toBase64(tree.root), `the installation checkpoint of ${tree.size} is the one seen before`);
  record(
    organization !== null,
    organization ? `the organization's log ${orgOrigin}: its checkpoints in the installation log each extend the one before (newest: ${organization.size} events, entry ${organization.entry})` : `no checkpoint of ${orgOrigin} in the installation log yet`,
  );

  if (verdicts.every((v) => v.ok)) {
    const next: MonitorState = { installation: { size: tree.size, root: toBase64(tree.root), edges: edges.map((level) => level.map((h) => h.toString('base64'))) }, organization };
    writeFileSync(`${options.state}.tmp`, `${JSON.stringify(next)}\n`);
    renameSync(`${options.state}.tmp`, options.state);
  }
  return summary(tree.size);
}

/** The caller's organization id, from the origin of its log's checkpoint (tlog-tiles, its key as bearer). */
async function organizationId(base: string, key: string): Promise<string> {
  const response = await fetch(`${base}/v1/ledger/log/checkpoint`, { headers: { authorization: `Bearer ${key}` } });
  if (!response.ok) throw new Error(`GET /v1/ledger/log/checkpoint: ${response.status}`);
  const origin = (await response.text()).split('\n')[0] ?? '';
  return origin.slice(origin.lastIndexOf('/') + 1);
}

/** That the organization's checkpoint `next` extends `previous`: the service's consistency proof, checked here. */
async function checkExtends(
  base: string,
  key: string,
  previous: { size: number; root: string; entry: number },
  next: { size: number; root: string; entry: number },
  record: (ok: boolean, check: string) => boolean,
): Promise<void> {
  const what = `the organization's checkpoint of ${next.size} (installation entry ${next.entry}) extends the one of ${previous.size} (entry ${previous.entry})`;
  if (next.size < previous.size) {
    record(false, `${what}: it is SMALLER, the log was rolled back or wiped`);
    return;
  }
  if (next.size === previous.size) {
    record(next.root === previous.root, next.root === previous.root ? what : `${what}: same size, another root: the log was REWRITTEN`);
    return;
  }
  const response = await fetch(`${base}/v1/ledger/consistency?from=${previous.size}&to=${next.size}`, { headers: { authorization: `Bearer ${key}` } });
  const body = response.ok ? ((await response.json()) as { proof: string[] }) : null;
  const proof = body?.proof.map((h) => fromBase64(h) ?? new Uint8Array());
  const ok = proof !== undefined && verifyConsistency(previous.size, next.size, proof, Buffer.from(previous.root, 'base64'), Buffer.from(next.root, 'base64'));
  record(ok, ok ? what : `${what}: no valid consistency proof (${response.status}): the log was REWRITTEN`);
}
