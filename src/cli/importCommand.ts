/**
 * `cli import`: JSON Lines (one create body per line) into POST /v1/events/batch, exactly once.
 *
 * Each batch is sent with an Idempotency-Key derived from the file and its line range, so a batch whose
 * answer was lost is retried without storing anything twice; a state file beside the input records the
 * first line not yet confirmed, so a run that was interrupted (Ctrl-C, kill -9, a lost connection)
 * resumes there when started again with the same arguments. Lines the service refuses (or that are not
 * JSON) are reported with their numbers and left out; the rest goes on.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
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
  bytes: number;
}

/** What the state file holds: which input it is about, and the first line not yet confirmed. */
const ZState = z.object({ source: z.string(), next_line: z.number().int().min(1) });
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
  let bytesRead = 0;
  let batch: Line[] = [];
  let batchBytes = 0;

  const flush = async () => {
    if (batch.length === 0) return;
    await sendBatch(options, sourceId, batch, summary);
    state.next_line = (batch[batch.length - 1] as Line).number + 1;
    saveState(statePath, state);
    batch = [];
    batchBytes = 0;
    progress.show(summary, bytesRead);
  };

  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
    summary.lines++;
    bytesRead += Buffer.byteLength(text) + 1;
    const number = summary.lines;
    if (number < state.next_line || text.trim() === '') continue;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      summary.refused.push({ line: number, message: `not JSON: ${error instanceof Error ? error.message : String(error)}` });
      continue;
    }
    const bytes = Buffer.byteLength(text);
    if (batch.length > 0 && (batch.length >= options.batchSize || batchBytes + bytes > MAX_BATCH_BYTES)) await flush();
    batch.push({ number, body, bytes });
    batchBytes += bytes;
  }
  await flush();
  // Lines after the last batch (blank, or refused here as not JSON) are done too.
  if (summary.lines >= state.next_line) {
    state.next_line = summary.lines + 1;
    saveState(statePath, state);
  }
  progress.show(summary, bytesRead, true);
  summary.refused.sort((a, b) => a.line - b.line);
  return summary;
}

function readState(path: string | undefined, source: string): State {
  const fresh = { source, next_line: 1 };
  if (!path || !existsSync(path)) return fresh;
  const parsed = ZState.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) throw new ImportError(`The state file ${path} is not one this command wrote; remove it to start over`);
  if (parsed.data.source !== source) throw new ImportError(`The state file ${path} belongs to ${parsed.data.source}; remove it to start over`);
  return parsed.data;
}

/** Written whole and renamed into place, so a kill leaves the old state or the new one, never half of one. */
function saveState(path: string | undefined, state: State): void {
  if (!path) return;
  writeFileSync(`${path}.tmp`, JSON.stringify(state));
  renameSync(`${path}.tmp`, path);
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
    const key = `import:${sourceId}:${numbers[0]}-${numbers[numbers.length - 1]}:${createHash('sha256').update(numbers.join(',')).digest('hex').slice(0, 12)}`;
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
