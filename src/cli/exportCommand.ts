/** `cli export`: a scripted export over the REST API, streamed to a file or stdout, progress on stderr. */
import { createWriteStream } from 'node:fs';
import { Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { httpFailure } from './failure';

export interface ExportOptions {
  url: string;
  key: string;
  format: string | undefined;
  out: string | undefined;
  filters: Record<string, string | undefined>;
  json: boolean;
  quiet: boolean;
  /** Also write the proofs sidecar (GET /v1/ledger/proofs with the same filters) to this file. */
  proofs: string | undefined;
}

export interface ExportSummary extends Record<string, unknown> {
  format: string;
  bytes: number;
  out: string | null;
  /** The ledger tree the export is pinned to: it holds the matching events with a sequence number up to this. */
  tree_size: number | null;
  /** Where the proofs sidecar went (with --with-proofs only). */
  proofs?: string;
}

export async function runExport(options: ExportOptions): Promise<ExportSummary> {
  if (options.json && !options.out) {
    // stdout carries the one JSON object; the export itself needs a file.
    throw new Error('--json needs --out FILE');
  }
  const format = options.format ?? 'json';
  // With proofs, both requests are pinned to one signed checkpoint, fetched first: the export and its
  // sidecar then describe one tree, however many events arrive meanwhile.
  const treeSize = options.proofs ? await newestCheckpointSize(options) : undefined;
  const url = new URL('/v1/events/export', options.url);
  url.searchParams.set('format', format);
  for (const [name, value] of Object.entries(options.filters)) if (value !== undefined) url.searchParams.set(name, value);
  if (treeSize !== undefined) url.searchParams.set('tree_size', String(treeSize));

  const response = await fetch(url, { headers: { Authorization: `Bearer ${options.key}` } });
  if (!response.ok || !response.body) throw httpFailure('export the events', response.status, await response.text());
  const pinned = Number(response.headers.get('ledger-tree-size') ?? Number.NaN);

  let bytes = 0;
  let lastReport = 0;
  // On a terminal the line is rewritten in place as the export goes; elsewhere (a pipe, a log) only the
  // final line is written, once, where a carriage return would glue the updates into one line.
  const live = process.stderr.isTTY;
  const line = { open: false };
  const report = (final: boolean) => {
    const now = Date.now();
    if (!final && (!live || now - lastReport < 500)) return;
    // With --out the closing summary says the size; a final progress line only closes one already shown.
    if (final && options.out && !line.open) return;
    lastReport = now;
    const size = bytes < 1e6 ? `${(bytes / 1e3).toFixed(1)} kB` : `${(bytes / 1e6).toFixed(1)} MB`;
    process.stderr.write(`${live ? '\r' : ''}exported ${size}${final ? '\n' : ''}`);
    line.open = !final;
  };
  const progress = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      if (!options.quiet) report(false);
      done(null, chunk);
    },
  });
  const sink: Writable = options.out ? createWriteStream(options.out) : process.stdout;
  try {
    await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), progress, sink, { end: Boolean(options.out) });
  } catch (error) {
    // The error's own line starts on a line of its own.
    if (line.open) process.stderr.write('\n');
    throw error;
  }
  if (!options.quiet) report(true);
  if (options.proofs && treeSize !== undefined) await writeProofs(options, options.proofs, treeSize);
  return { format, bytes, out: options.out ?? null, tree_size: Number.isInteger(pinned) ? pinned : null, ...(options.proofs ? { proofs: options.proofs } : {}) };
}

async function newestCheckpointSize(options: ExportOptions): Promise<number> {
  const response = await fetch(new URL('/v1/ledger/checkpoint', options.url), { headers: { Authorization: `Bearer ${options.key}` } });
  const text = await response.text();
  if (!response.ok) throw httpFailure('give the newest checkpoint to pin the export to', response.status, text);
  return (JSON.parse(text) as { tree_size: number }).tree_size;
}

async function writeProofs(options: ExportOptions, path: string, treeSize: number): Promise<void> {
  const url = new URL('/v1/ledger/proofs', options.url);
  for (const [name, value] of Object.entries(options.filters)) if (value !== undefined) url.searchParams.set(name, value);
  url.searchParams.set('tree_size', String(treeSize));
  const response = await fetch(url, { headers: { Authorization: `Bearer ${options.key}` } });
  if (!response.ok || !response.body) throw httpFailure('give the proofs of the export', response.status, await response.text());
  await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), createWriteStream(path));
}
