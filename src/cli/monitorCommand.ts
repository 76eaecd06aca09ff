/**
 * `monitor`: what a customer runs (from cron, say) to hold the operator to one history of their
 * organization's log. It remembers, in its state file, the organization's newest checkpoint it verified
 * and checks on every run that the one the service serves now extends it (same size: the same root;
 * larger: the service's consistency proof, checked here): a log rolled back, rewritten, wiped or halted
 * fails the run, even when none of it reaches the installation log. It also reads the installation log
 * through its tlog-tiles API, checks its newest checkpoint's signature and, with a policy, its
 * witnesses' quorum, proves that the installation log only grew since the last run (its tree rebuilt
 * from the entries since, on the right edge kept in the state file), and checks that every checkpoint of
 * the organization's log among the new entries extends the one before. A rewritten or wiped
 * organization log cannot hide: its new checkpoints must enter the witnessed installation log to be
 * accepted by `verify --policy`, and there the monitor meets them. The state is replaced (atomically)
 * only by a run that passes, so a failing run never forgets what the service must extend. The checks
 * are the client's (src/client/monitorCheck.ts); here, the state file and HTTP.
 */
import { closeSync, existsSync, fsyncSync, openSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fromBase64 } from '../domain/ledger/formats';
import { parseVerifierKey } from '../domain/ledger/note';
import { TILE_WIDTH } from '../domain/ledger/tiles';
import { tileIndexPath } from '../domain/ledger/tilePaths';
import { parsePolicy } from '../domain/ledger/witnessFormats';
import { firstMonitorState, monitorLog, type MonitorSource, type MonitorState, type MonitorSummary } from '../client/monitorCheck';
import { CliFailure, readOptionFile } from './failure';

export interface MonitorOptions {
  url: string;
  key: string;
  verifierKey: string;
  state: string;
  policy: string | undefined;
  installationToken: string | undefined;
}

export async function runMonitor(options: MonitorOptions): Promise<MonitorSummary> {
  const verifier = parseVerifierKey(options.verifierKey);
  // The files first: one that cannot be read fails the run before anything is fetched or written.
  const policy = options.policy === undefined ? null : parsePolicy(readOptionFile(options.policy, 'policy'));
  const state: MonitorState = existsSync(options.state) ? readState(options.state) : firstMonitorState();
  const { summary, next } = await monitorLog(serviceSource(options), verifier, state, policy);
  if (next) writeState(options.state, next);
  return summary;
}

/** The service at `options.url`, over HTTP: the organization's log with its key, the installation log with the installation token (if any). */
function serviceSource(options: MonitorOptions): MonitorSource {
  const base = options.url.replace(/\/+$/, '');
  const organization = { authorization: `Bearer ${options.key}` };
  const installation: Record<string, string> = options.installationToken ? { authorization: `Bearer ${options.installationToken}` } : {};
  const fetchOk = async (path: string, headers: Record<string, string>): Promise<Response> => {
    const response = await fetch(`${base}${path}`, { headers });
    if (!response.ok) throw new Error(`GET ${path}: ${response.status}`);
    return response;
  };
  return {
    async organizationCheckpoint() {
      const path = '/v1/ledger/log/checkpoint';
      const response = await fetch(`${base}${path}`, { headers: organization });
      if (response.status === 404) return null;
      if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await errorMessage(response)}`.trimEnd());
      return response.text();
    },
    async consistency(from, to) {
      const response = await fetch(`${base}/v1/ledger/consistency?from=${from}&to=${to}`, { headers: organization });
      const body = response.ok ? ((await response.json()) as { proof?: unknown }) : null;
      const proof = Array.isArray(body?.proof) ? (body.proof as unknown[]).map((h) => (typeof h === 'string' ? fromBase64(h) : null) ?? new Uint8Array()) : undefined;
      return { proof, status: response.status };
    },
    async installationCheckpoint() {
      return (await fetchOk('/v1/ledger/installation/checkpoint', installation)).text();
    },
    async entryBundle(index, width) {
      const path = `/v1/ledger/installation/tile/entries/${tileIndexPath(index)}${width < TILE_WIDTH ? `.p/${width}` : ''}`;
      return Buffer.from(await (await fetchOk(path, installation)).arrayBuffer());
    },
  };
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

