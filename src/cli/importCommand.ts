/**
 * `cli import`: JSON Lines (one create body per line) into POST /v1/events/batch, exactly once.
 *
 * Each batch is sent with an Idempotency-Key derived from the file, its line range and the lines'
 * content, so a batch whose answer was lost is retried without storing anything twice; a state file
 * beside the input records the first line not yet confirmed, with the size and SHA-256 of the input
 * before it, so a run that was interrupted (Ctrl-C, kill -9, a lost connection) resumes there when
 * started again with the same arguments, and only on the same input (a changed file is refused). Lines the service refuses (or that are not
 * JSON) are reported with their numbers and left out; the rest goes on.
 */
import { createHash, type Hash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { ZErrorBody } from '../domain/errors';

export interface ImportOptions {
  url: string;
  key: string;
  /** A path, or `-` for stdin. */
  file: string;
  /** Where progress is kept; default `<file>.import-state.json` (none for stdin). */
  state: string | undefined;
  batchSize: number;
  quiet: boolean;
}

export interface RefusedLine {
  line: number;
  message: string;
  fields?: string[];
}

export interface ImportSummary extends Record<string, unknown> {
  imported: number;
  /** Lines answered from an earlier run's batches (sent again, stored nothing). */
  replayed: number;
  refused: RefusedLine[];
  /** Lines skipped because the state file says an earlier run confirmed them. */
  resumed_after_line: number;
  lines: number;
}

interface Line {
  number: number;
  body: unknown;
  /** The line as read: the batch's Idempotency-Key commits to it. */
  text: string;
  bytes: number;
}

/**
 * What the state file holds: which input it is about, the first line not yet confirmed, and the size and
 * SHA-256 of the input's lines before it (each line's text and a newline), which a resumed run checks.
 */
const ZState = z.object({ source: z.string(), next_line: z.number().int().min(1), bytes: z.number().int().min(0), sha256: z.string() });
type State = z.infer<typeof ZState>;

/** Stays under the service's 5 MiB batch body limit with room for the envelope. */
const MAX_BATCH_BYTES = 4 * 1024 * 1024;
/** Attempts per batch when the service or the network fails (503, a dropped connection), with growing waits. */
const MAX_ATTEMPTS = 8;

export class ImportError extends Error {
  override readonly name = 'ImportError';
}

/** Where an input line is, in a field the service names: `events[3].actor.id` → item 3, `actor.id`. */
function itemOf(field: string): { index: number; rest: string } | null {
  const match = /^events\[(\d+)\]\.?(.*)$/.exec(field);
  return match ? { index: Number(match[1]), rest: match[2] ?? '' } : null;
}

class Progress {
  private readonly started = Date.now();
  private last = 0;
  constructor(
    private readonly totalBytes: number | null,
    private readonly quiet: boolean,
  ) {}

  show(summary: ImportSummary, bytesRead: number, final = false): void {
    if (this.quiet) return;
    const now = Date.now();
    if (!final && now - this.last < (process.stderr.isTTY ? 200 : 2000)) return;
    this.last = now;
    const rate = Math.round((summary.imported + summary.replayed) / Math.max(0.001, (now - this.started) / 1000));
    const counts = `${summary.imported} imported, ${summary.replayed} already there, ${summary.refused.length} refused, ${rate} events/s`;
    if (process.stderr.isTTY) {
      const share = this.totalBytes ? Math.min(1, bytesRead / this.totalBytes) : null;
      const bar = share === null ? '' : `[${'#'.repeat(Math.round(share * 30)).padEnd(30, '.')}] ${(share * 100).toFixed(0).padStart(3)}% `;
      process.stderr.write(`\r${bar}line ${summary.lines}: ${counts}\u001b[K${final ? '\n' : ''}`);
    } else {
      process.stderr.write(`import: line ${summary.lines}: ${counts}\n`);
    }
  }
}

export async function runImport(options: ImportOptions): Promise<ImportSummary> {
  const stdin = options.file === '-';
  const source = stdin ? 'stdin' : resolve(options.file);
  if (!stdin && !existsSync(source)) throw new ImportError(`No such file: ${options.file}`);
  const sourceId = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const statePath = options.state ?? (stdin ? undefined : `${source}.import-state.json`);
  const state = readState(statePath, source);

  const summary: ImportSummary = { imported: 0, replayed: 0, refused: [], resumed_after_line: state.next_line - 1, lines: 0 };
  const progress = new Progress(stdin ? null : statSync(source).size, options.quiet);
  const input = stdin ? process.stdin : createReadStream(source);
  /** The input read so far, hashed: what the state file binds the next line to. */
  const read: { bytes: number; hash: Hash } = { bytes: 0, hash: createHash('sha256') };
  const mark = (nextLine: number) => {
    state.next_line = nextLine;
    state.bytes = read.bytes;
    state.sha256 = read.hash.copy().digest('hex');
  };
  const resumed = { nextLine: state.next_line, bytes: state.bytes, sha256: state.sha256 };
  const checkResumed = () => {
    if (read.bytes !== resumed.bytes || read.hash.copy().digest('hex') !== resumed.sha256) {
      throw new ImportError(`The input is not the one the state file ${statePath ?? ''} was written for (its first ${state.next_line - 1} lines changed): remove the state file to import it from the start`);
    }
  };
  let batch: Line[] = [];
  let batchBytes = 0;

  /** Sends the batch; the lines before `nextLine` are then all confirmed. */
  const flush = async (nextLine: number) => {
    if (batch.length === 0) return;
    await sendBatch(options, sourceId, batch, summary);
    mark(nextLine);
    saveState(statePath, state);
    batch = [];
    batchBytes = 0;
    progress.show(summary, read.bytes);
  };

  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
    summary.lines++;
    const number = summary.lines;
    if (number === resumed.nextLine) checkResumed();
    try {
      if (number < state.next_line || text.trim() === '') continue;
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (error) {
        summary.refused.push({ line: number, message: `not JSON: ${error instanceof Error ? error.message : String(error)}` });
        continue;
      }
      const bytes = Buffer.byteLength(text);
      if (batch.length > 0 && (batch.length >= options.batchSize || batchBytes + bytes > MAX_BATCH_BYTES)) await flush(number);
      batch.push({ number, body, text, bytes });
      batchBytes += bytes;
    } finally {
      // Counted once the line is dealt with: a flush above confirms the lines before this one only.
      read.bytes += Buffer.byteLength(text) + 1;
      read.hash.update(text).update('\n');
    }
  }
  // The input ended before the line to resume at: all of it must be what the state file describes.
  if (summary.lines < resumed.nextLine) checkResumed();
  await flush(summary.lines + 1);
  // Lines after the last batch (blank, or refused here as not JSON) are done too.
  if (summary.lines >= state.next_line) {
    mark(summary.lines + 1);
    saveState(statePath, state);
  }
  progress.show(summary, read.bytes, true);
  summary.refused.sort((a, b) => a.line - b.line);
  return summary;
}

function readState(path: string | undefined, source: string): State {
  const fresh = { source, next_line: 1, bytes: 0, sha256: createHash('sha256').digest('hex') };
  if (!path || !existsSync(path)) return fresh;
  const parsed = ZState.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) throw new ImportError(`The state file ${path} is not one this command wrote; remove it to start over`);
  if (parsed.data.source !== source) throw new ImportError(`The state file ${path} belongs to ${parsed.data.source}; remove it to start over`);
  return parsed.data;
}

/**
 * Written whole to a new file and renamed into place, so a kill leaves the old state or the new one,
 * never half of one. Never through a symlink: the new file is created exclusively (an existing name,
 * a symlink included, makes the write fail), and the rename replaces a symlink at `path` itself.
 */
function saveState(path: string | undefined, state: State): void {
  if (!path) return;
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temporary, JSON.stringify(state), { flag: 'wx', mode: 0o600 });
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

/**
 * Sends one batch until it is stored. A 400 names the refused events: those lines are reported and the
 * rest is sent again, as a new request with its own key (the line set differs); the key of each request
 * depends only on the input, so a rerun sends the very same requests.
 */
async function sendBatch(options: ImportOptions, sourceId: string, lines: Line[], summary: ImportSummary): Promise<void> {
  let pending = lines;
  while (pending.length > 0) {
    const numbers = pending.map((l) => l.number);
    // The same lines of the same input give the same key, run after run; other content, another key.
    const content = createHash('sha256');
    for (const line of pending) content.update(`${line.number}\n${line.text}\n`);
    const key = `import:${sourceId}:${numbers[0]}-${numbers[numbers.length - 1]}:${content.digest('hex').slice(0, 24)}`;
    const response = await postWithRetries(options, key, pending.map((l) => l.body));
    if (response.status === 201) {
      if (response.replayed) summary.replayed += pending.length;
      else summary.imported += pending.length;
      return;
    }
    const error = ZErrorBody.safeParse(response.body);
    const message = error.success ? error.data.message : `HTTP ${response.status}`;
    if (response.status !== 400) throw new ImportError(`Import stopped at line ${numbers[0]}: HTTP ${response.status} ${message}. Run the same command again to resume.`);
    // Which lines the 400 is about; if it names none, every line of the batch is refused with it.
    const named = new Map<number, string[]>();
    for (const field of (error.success ? error.data.fields : undefined) ?? []) {
      const item = itemOf(field);
      if (item && item.index < pending.length) named.set(item.index, [...(named.get(item.index) ?? []), item.rest]);
    }
    const refusedIndexes = named.size > 0 ? named : new Map(pending.map((_, i) => [i, []]));
    for (const [index, fields] of refusedIndexes) {
      const line = (pending[index] as Line).number;
      summary.refused.push({ line, message, ...(fields.length ? { fields } : {}) });
    }
    pending = pending.filter((_, i) => !refusedIndexes.has(i));
  }
}

interface Answer {
  status: number;
  body: unknown;
  replayed: boolean;
}

async function postWithRetries(options: ImportOptions, key: string, events: unknown[]): Promise<Answer> {
  const body = JSON.stringify({ events });
  for (let attempt = 1; ; attempt++) {
    let answer: Answer | null = null;
    let wait = Math.min(30, 2 ** (attempt - 1));
    try {
      const response = await fetch(new URL('/v1/events/batch', options.url), {
        method: 'POST',
        headers: { authorization: `Bearer ${options.key}`, 'content-type': 'application/json', 'idempotency-key': key },
        body,
      });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: kept as text for the message
      }
      answer = { status: response.status, body: parsed, replayed: response.headers.get('idempotent-replayed') === 'true' };
      const retryAfter = Number(response.headers.get('retry-after'));
      if (response.status < 500) return answer;
      if (retryAfter > 0) wait = Math.min(60, retryAfter);
    } catch (error) {
      // No answer: the batch may or may not be stored. Its key makes sending it again safe.
      if (attempt >= MAX_ATTEMPTS) throw new ImportError(`Import stopped: ${error instanceof Error ? error.message : String(error)}. Run the same command again to resume.`);
    }
    if (attempt >= MAX_ATTEMPTS && answer) return answer;
    await sleep(wait * 1000);
  }
}
