/**
 * A c2sp.org/tlog-witness v1.0.0 witness anyone can run (`audit-ledger witness serve`): it cosigns
 * (cosignature/v1) a log's checkpoint only once it is proven to extend the newest one it cosigned for
 * that log, and it keeps that newest checkpoint per log in a state file.
 *
 * State is one JSON file, replaced atomically (written beside it, fsynced, renamed over it, the directory
 * fsynced) before any answer, and requests are handled one at a time, so the check of the old size and
 * the new state are one step (the race the spec warns of cannot happen). A file, not a database: a
 * witness follows a handful of logs, must run on a customer's own machine with nothing else installed,
 * and a rename is atomic on every POSIX file system.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Cosigner, cosign, cosignerKeyFileText, parseCosignerKeyFile } from '../domain/ledger/cosigner';
import { NoteError, parseCheckpoint, toBase64 } from '../domain/ledger/formats';
import { verifyConsistency } from '../domain/ledger/merkle';
import { openNote, parseVerifierKey, type Verifier } from '../domain/ledger/note';
import { noteText, parseAddCheckpointBody, SIZE_CONTENT_TYPE } from '../domain/ledger/witnessFormats';

/** The empty tree's root (RFC 6962: SHA-256 of nothing), base64. */
const EMPTY_ROOT = '47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=';

/** One log the witness follows: its origin and the key its checkpoints must be signed with. */
export interface FollowedLog {
  origin: string;
  verifier: Verifier;
}

/** What the witness holds per log: the newest checkpoint it cosigned. */
interface LogState {
  size: number;
  root: string;
}

export interface WitnessAnswer {
  status: number;
  contentType?: string;
  body: string;
}

/**
 * The logs a witness follows, one per line: `log <origin> <verifier key>` (Go's signed-note verifier
 * key of the log's signer); `#` starts a comment. The origin is given apart from the key because a log's
 * key may sign several logs (the audit ledger's key signs every organization's log and the installation log).
 */
export function parseWitnessConfig(text: string): FollowedLog[] {
  const logs: FollowedLog[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const parts = line.split(/[ \t]+/);
    if (parts[0] !== 'log' || parts.length !== 3) throw new NoteError(`witness configuration line ${i + 1}: expected "log <origin> <verifier key>"`);
    const origin = parts[1] as string;
    if (logs.some((log) => log.origin === origin)) throw new NoteError(`witness configuration line ${i + 1}: the log ${origin} is listed twice`);
    try {
      logs.push({ origin, verifier: parseVerifierKey(parts[2] as string) });
    } catch (error) {
      throw new NoteError(`witness configuration line ${i + 1}: ${(error as Error).message}`);
    }
  });
  return logs;
}

/** The witness's key: read from `path`, or made there (mode 0600) under `name` when the file does not exist. */
export function loadOrCreateWitnessKey(path: string, name: string | undefined): { cosigner: Cosigner; created: boolean } {
  let created = false;
  try {
    readFileSync(path);
  } catch {
    if (!name) throw new NoteError(`no witness key at ${path}: give --name to make one`);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${cosignerKeyFileText(name, randomBytes(32))}\n`, { mode: 0o600, flag: 'wx' });
    created = true;
  }
  return { cosigner: parseCosignerKeyFile(readFileSync(path, 'utf8')), created };
}

export class Witness {
  private state: Record<string, LogState>;
  /** Requests are handled one after another: the check and the new state are one step. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly cosigner: Cosigner,
    private readonly logs: readonly FollowedLog[],
    private readonly statePath: string,
    private readonly clock: () => number = () => Math.floor(Date.now() / 1000),
  ) {
    let stored: unknown = {};
    try {
      stored = JSON.parse(readFileSync(statePath, 'utf8'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new NoteError(`the witness state ${statePath} cannot be read: ${String(error)}`);
    }
    this.state = (stored as { logs?: Record<string, LogState> }).logs ?? {};
  }

  /** The newest checkpoint cosigned per origin (size and root). */
  get cosigned(): Readonly<Record<string, LogState>> {
    return this.state;
  }

  addCheckpoint(body: string): Promise<WitnessAnswer> {
    const answer = this.queue.then(() => this.handle(body));
    this.queue = answer.catch(() => undefined);
    return answer;
  }

  private handle(body: string): WitnessAnswer {
    const status = (code: number, text = '') => ({ status: code, body: text });
    let request;
    try {
      request = parseAddCheckpointBody(body);
    } catch {
      return status(400, 'malformed add-checkpoint request\n');
    }
    const origin = request.note.slice(0, request.note.indexOf('\n'));
    const log = this.logs.find((l) => l.origin === origin);
    if (!log) return status(404, 'unknown log\n');
    let checkpoint;
    try {
      // Signatures by other keys (other witnesses' cosignatures) are ignored; a bad one by the log's key fails.
      checkpoint = parseCheckpoint(openNote(request.note, log.verifier));
    } catch {
      return status(403, 'no valid signature by the log\'s key\n');
    }
    if (checkpoint.origin !== origin) return status(403, 'no valid signature by the log\'s key\n');
    const root = toBase64(checkpoint.root);
    if (checkpoint.size === 0 && root !== EMPTY_ROOT) return status(422, 'an empty tree has the empty root\n');
    if (request.oldSize > checkpoint.size) return status(400, 'old size larger than the checkpoint\'s\n');
    const held = this.state[origin] ?? { size: 0, root: EMPTY_ROOT };
    if (request.oldSize !== held.size) return { status: 409, contentType: SIZE_CONTENT_TYPE, body: `${held.size}\n` };
    if (held.size === checkpoint.size) {
      if (held.root !== root) return { status: 409, contentType: SIZE_CONTENT_TYPE, body: `${held.size}\n` };
    } else if (held.size === 0) {
      if (request.proof.length > 0) return status(422, 'the proof from an empty tree is empty\n');
    } else if (!verifyConsistency(held.size, checkpoint.size, request.proof, Buffer.from(held.root, 'base64'), checkpoint.root)) {
      return status(422, 'the consistency proof does not verify\n');
    }
    this.state = { ...this.state, [origin]: { size: checkpoint.size, root } };
    this.persist();
    return { status: 200, body: cosign(noteText(request.note), this.cosigner, this.clock()) };
  }

  private persist(): void {
    const temporary = `${this.statePath}.${process.pid}.tmp`;
    const fd = openSync(temporary, 'w', 0o600);
    try {
      writeFileSync(fd, `${JSON.stringify({ logs: this.state }, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.statePath);
    const dir = openSync(dirname(this.statePath), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }
}
