/**
 * `cli stream verify`: checks what a log stream delivered, offline, with nothing but the pinned verifier
 * key: a directory of delivered objects (an S3 stream's `.jsonl.gz` objects as downloaded, or `.jsonl`
 * files a webhook receiver wrote), and optionally a checkpoint fetched apart from the delivery (GET
 * /v1/ledger/checkpoint) that it must reach. The checks are the client's (src/client/streamCheck.ts);
 * here, the files.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parseVerifierKey } from '../domain/ledger/note';
import { checkDelivery, type StreamVerifySummary } from '../client/streamCheck';

/** Every delivered file under `dir`, in key order (an S3 stream's keys sort by date, then sequence). */
function deliveredFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && /\.jsonl(\.gz)?$/.test(entry.name)) out.push(join(entry.parentPath, entry.name));
  }
  return out.sort();
}

function linesOf(path: string): string[] {
  const raw = readFileSync(path);
  const text = path.endsWith('.gz') ? gunzipSync(raw).toString('utf8') : raw.toString('utf8');
  return text.split('\n').filter((line) => line.trim() !== '');
}

/** Checks the delivery under `options.dir` (and the checkpoint in the file `options.checkpoint`). */
export async function runVerifyStream(options: { verifierKey: string; dir: string; checkpoint?: string | undefined }): Promise<StreamVerifySummary> {
  const verifier = parseVerifierKey(options.verifierKey);
  const files = deliveredFiles(options.dir).map((name) => ({ name, lines: () => linesOf(name) }));
  const given = options.checkpoint;
  return checkDelivery(verifier, options.dir, files, given ? () => readFileSync(given, 'utf8') : undefined);
}
