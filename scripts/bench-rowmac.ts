/**
 * `npm run bench:rowmac`: what row MACs (trust at rest) cost ingest and export, A/B in one run. A is the
 * commit before them (a git worktree sharing this checkout's node_modules), B this checkout (or the
 * checkout at BENCH_ROWMAC_AFTER, e.g. a snapshot of a tree others keep editing). Each side is a fresh
 * service process on a fresh database of the same server, loaded alike: single events (POST /v1/events,
 * as `npm run bench`), batches of 100, then a second organization gets BENCH_ROWMAC_EXPORT events
 * (default 20,000) in batches and exports them as JSON (twice). The pairs alternate which side goes first,
 * so the drift of a shared machine falls on both. Last, in this process, a microbenchmark of B's
 * `eventMac` (the writer's new work per event) and `isOwnStored` (a read's new work per row) over the
 * events B stored. Prints B/A per pair and the medians, and writes a section to BENCHMARKS.md.
 * Needs MONGODB_URI (`npm run db:ferretdb` prints one). BENCH_ROWMAC_PAIRS pairs (default 4).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { ApiKeyRepository } from '../src/db/apiKeyRepository';
import type * as Documents from '../src/db/documents';
import type * as RowMacs from '../src/db/rowMacs';
import type * as Note from '../src/domain/ledger/note';
import type * as RowMacModule from '../src/domain/ledger/rowMac';
import { collections } from '../src/db/database';
import { OrgRepository } from '../src/db/orgRepository';
import { BATCH_BODIES, BATCH_SIZE, loadBatches } from './bench/batchIngest';
import { BENCH_PLAN_CAPS, cpuSecondsOf, loadWithCpu, recordBenchmark, ROOT, runHeading, SECONDS, serviceEnv, singleEventRequests, startProcess, stop } from './bench/common';

/** The commit before row MACs: the parent of "Row MACs: a key derived from the signing key file …" (f8959d7). */
const BASELINE_COMMIT = '399e612';
const PAIRS = Number(process.env.BENCH_ROWMAC_PAIRS ?? 4);
const EXPORT_EVENTS = Number(process.env.BENCH_ROWMAC_EXPORT ?? 20_000);
const EXPORT_RUNS = 1;
const AFTER = process.env.BENCH_ROWMAC_AFTER ?? ROOT;

interface Side {
  single: number;
  singleCpuMs: number;
  batch: number;
  batchCpuMs: number;
  /** Rows per second of the JSON export (the fastest of EXPORT_RUNS), and the server's CPU per row (ms). */
  exportRate: number;
  exportCpuMs: number;
  exportRows: number;
  /** Stored events carrying a `mac` field, of all (a check that B seals and A does not). */
  withMac: number;
  stored: number;
}

async function organization(uri: string, dbName: string, name: string): Promise<{ tenant: string; headers: Record<string, string> }> {
  const client = await MongoClient.connect(uri);
  try {
    const c = collections(client.db(dbName));
    const org = await new OrgRepository(c, BENCH_PLAN_CAPS).create({ name, plan: 'enterprise', monthlyCap: 1_000_000_000 }, new Date());
    const { key } = await new ApiKeyRepository(c).forOrg(org._id).create('bench', new Date());
    return { tenant: org._id, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } };
  } finally {
    await client.close();
  }
}

/** `events` events in batches of 100, eight requests in flight. */
async function fill(url: string, headers: Record<string, string>, events: number): Promise<void> {
  let next = 0;
  const requests = Math.ceil(events / BATCH_SIZE);
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < requests) {
      const n = next++;
      const response = await fetch(`${url}/v1/events/batch`, { method: 'POST', headers, body: BATCH_BODIES[n % BATCH_BODIES.length] });
      if (!response.ok) throw new Error(`batch ${n}: ${response.status} ${await response.text()}`);
      await response.arrayBuffer();
    }
  }));
}

async function exportOnce(url: string, headers: Record<string, string>, pid: number): Promise<{ rows: number; seconds: number; cpuMs: number }> {
  const cpu = cpuSecondsOf(pid);
  const started = performance.now();
  const response = await fetch(`${url}/v1/events/export?format=json`, { headers });
  if (!response.ok) throw new Error(`export: ${response.status} ${await response.text()}`);
  const text = await response.text();
  const seconds = (performance.now() - started) / 1000;
  const cpuMs = (cpuSecondsOf(pid) - cpu) * 1000;
  return { rows: (JSON.parse(text) as unknown[]).length, seconds, cpuMs };
}

/** One side: the checkout at `cwd` on a fresh database; `keep` receives the export organization's stored rows before the database goes. */
async function measure(uri: string, dbName: string, cwd: string, keep?: (docs: unknown[]) => void): Promise<Side> {
  const service = await startProcess('src/main.ts', serviceEnv(uri, dbName), cwd);
  const client = await MongoClient.connect(uri);
  try {
    const pid = service.child.pid ?? 0;
    const { headers } = await organization(uri, dbName, 'Bench');
    const single = await loadWithCpu(pid, { url: service.url, headers, requests: singleEventRequests() });
    const batch = await loadBatches(service.url, headers, pid);
    if (single.non2xx + batch.non2xx > 0) throw new Error(`non-2xx answers: ${single.non2xx} single, ${batch.non2xx} batches`);
    // The export: a second organization with exactly EXPORT_EVENTS events, let the ledger catch up, then read them.
    const { tenant, headers: exportHeaders } = await organization(uri, dbName, 'Export');
    await fill(service.url, exportHeaders, EXPORT_EVENTS);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const exports = [];
    for (let i = 0; i < EXPORT_RUNS; i++) exports.push(await exportOnce(service.url, exportHeaders, pid));
    const best = exports.reduce((a, b) => (a.seconds <= b.seconds ? a : b));
    // Plus the organization's own records of the exports before it (services/selfAudit.ts).
    if (best.rows < EXPORT_EVENTS) throw new Error(`the export gave ${best.rows} rows, fewer than ${EXPORT_EVENTS}`);
    const events = client.db(dbName).collection('events');
    const [stored, withMac] = await Promise.all([events.countDocuments({}), events.countDocuments({ mac: { $exists: true } })]);
    if (keep) keep(await events.find({ tenant }).toArray());
    return {
      single: single.rps, singleCpuMs: single.cpuMsPerRequest, batch: batch.eventsPerSecond, batchCpuMs: batch.cpuMsPerEvent,
      exportRate: best.rows / best.seconds, exportCpuMs: best.cpuMs / best.rows, exportRows: best.rows, withMac, stored,
    };
  } finally {
    await stop(service);
    await client.db(dbName).dropDatabase();
    await client.close();
  }
}

interface Micro { events: number; eventMacUs: number; isOwnUs: number; isOwnGivenCommitUs: number; leafCommitUs: number; allOwn: boolean }

/** B's own functions over B's stored events: µs per event, the best of five passes. */
async function microbenchmark(docs: unknown[]): Promise<Micro> {
  const { eventMac, isOwnStored } = (await import(join(AFTER, 'src/db/rowMacs.ts'))) as typeof RowMacs;
  const { RowMac } = (await import(join(AFTER, 'src/domain/ledger/rowMac.ts'))) as typeof RowMacModule;
  const { parsePrivateKey } = (await import(join(AFTER, 'src/domain/ledger/note.ts'))) as typeof Note;
  const { leafCommitOfDoc } = (await import(join(AFTER, 'src/db/documents.ts'))) as typeof Documents;
  type Doc = Parameters<typeof isOwnStored>[1] & Parameters<typeof leafCommitOfDoc>[0];
  const rows = docs as Doc[];
  const rowMac = RowMac.fromSigner(parsePrivateKey(readFileSync(serviceEnv('', '').LEDGER_SIGNING_KEY_FILE ?? '', 'utf8')));
  const commits = rows.map((d) => leafCommitOfDoc(d));
  const time = (fn: (i: number) => unknown): number => {
    let best = Infinity;
    for (let pass = 0; pass < 5; pass++) {
      const started = performance.now();
      for (let i = 0; i < rows.length; i++) fn(i);
      best = Math.min(best, ((performance.now() - started) * 1000) / rows.length);
    }
    return best;
  };
  let sink = 0;
  const eventMacUs = time((i) => { sink += eventMac(rowMac, rows[i] as Doc, commits[i] as (typeof commits)[number]).length; });
  const isOwnGivenCommitUs = time((i) => { sink += isOwnStored(rowMac, rows[i] as Doc, commits[i]) ? 1 : 0; });
  const isOwnUs = time((i) => { sink += isOwnStored(rowMac, rows[i] as Doc) ? 1 : 0; });
  const leafCommitUs = time((i) => { sink += leafCommitOfDoc(rows[i] as Doc).hash.length; });
  const allOwn = rows.every((d) => isOwnStored(rowMac, d));
  if (sink < 0) console.log(sink);
  return { events: rows.length, eventMacUs, isOwnUs, isOwnGivenCommitUs, leafCommitUs, allOwn };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
const pct = (r: number) => `${(r * 100).toFixed(0)}%`;
const load = () => loadavg().map((l) => l.toFixed(2)).join(' / ');

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('set MONGODB_URI (npm run db:ferretdb prints one)');
  const loadBefore = load();
  console.log(`load average (1/5/15 min) at the start: ${loadBefore}; B = ${AFTER}`);
  const dbName = `bench_${Date.now()}_rowmac`;
  const dir = mkdtempSync(join(tmpdir(), 'audit-ledger-before-rowmac-'));
  execFileSync('git', ['worktree', 'add', '--detach', dir, BASELINE_COMMIT], { cwd: ROOT, stdio: 'ignore' });
  const pairs: { a: Side; b: Side }[] = [];
  let kept: unknown[] = [];
  try {
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    for (let i = 0; i < PAIRS; i++) {
      const run = (cwd: string, side: string) => measure(uri, `${dbName}${i}_${side}`, cwd, side === 'b' ? (docs) => { kept = docs; } : undefined);
      let a: Side;
      let b: Side;
      if (i % 2 === 0) {
        a = await run(dir, 'a');
        b = await run(AFTER, 'b');
      } else {
        b = await run(AFTER, 'b');
        a = await run(dir, 'a');
      }
      pairs.push({ a, b });
      console.log(`pair ${i + 1} (${i % 2 === 0 ? 'A first' : 'B first'}): single ${a.single.toFixed(0)} → ${b.single.toFixed(0)} (${pct(b.single / a.single)}), ` +
        `batches ${a.batch.toFixed(0)} → ${b.batch.toFixed(0)} (${pct(b.batch / a.batch)}), export ${a.exportRate.toFixed(0)} → ${b.exportRate.toFixed(0)} rows/s (${pct(b.exportRate / a.exportRate)}); ` +
        `CPU ms/event single ${a.singleCpuMs.toFixed(3)} → ${b.singleCpuMs.toFixed(3)}, batch ${a.batchCpuMs.toFixed(3)} → ${b.batchCpuMs.toFixed(3)}, export ${a.exportCpuMs.toFixed(3)} → ${b.exportCpuMs.toFixed(3)}; ` +
        `rows with a mac: A ${a.withMac}/${a.stored}, B ${b.withMac}/${b.stored}; load ${load()}`);
    }
  } finally {
    execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT, stdio: 'ignore' });
  }
  const micro = await microbenchmark(kept);
  console.log(`microbenchmark over ${micro.events} of B's stored events: eventMac ${micro.eventMacUs.toFixed(2)} µs, isOwnStored ${micro.isOwnUs.toFixed(2)} µs ` +
    `(${micro.isOwnGivenCommitUs.toFixed(2)} µs given the leaf commitment; the leaf commitment alone ${micro.leafCommitUs.toFixed(2)} µs); all own: ${micro.allOwn}`);
  const loadAfter = load();

  const measures: [string, (s: Side) => number, (s: Side) => number | null][] = [
    ['single events, events/s', (s) => s.single, (s) => s.singleCpuMs],
    [`batches of ${BATCH_SIZE}, events/s`, (s) => s.batch, (s) => s.batchCpuMs],
    [`JSON export of ${EXPORT_EVENTS.toLocaleString('en')} events, rows/s`, (s) => s.exportRate, (s) => s.exportCpuMs],
  ];
  const ratios = (pick: (s: Side) => number) => pairs.map((p) => pick(p.b) / pick(p.a));
  const summary = measures.map(([what, pick, cpu]) => {
    const r = ratios(pick);
    const c = ratios((s) => cpu(s) ?? 0);
    return `| ${what} | ${pairs.map((p) => `${pick(p.a).toFixed(0)} → ${pick(p.b).toFixed(0)} (${pct(pick(p.b) / pick(p.a))})`).join(' | ')} | **${pct(median(r))}** (${pct(Math.min(...r))}–${pct(Math.max(...r))}) | ` +
      `${median(pairs.map((p) => cpu(p.a) ?? 0)).toFixed(3)} → ${median(pairs.map((p) => cpu(p.b) ?? 0)).toFixed(3)} (${pct(median(c))}) |`;
  });
  const lines = [
    await runHeading(uri, 'Row MACs (trust at rest): the cost on ingest, `npm run bench:rowmac`'),
    '',
    `A: \`${BASELINE_COMMIT}\` (before row MACs), B: ${AFTER === ROOT ? 'this checkout' : `\`${AFTER}\``}; ${PAIRS} alternating pairs, each side a fresh service process on a fresh database, ${SECONDS} s per load ` +
      `(autocannon as \`npm run bench\`: 50 connections for single events, 8 for batches), then ${EXPORT_EVENTS.toLocaleString('en')} events of a second organization exported as JSON (one run). ` +
      `Load average (1 / 5 / 15 min) at the start ${loadBefore}, at the end ${loadAfter}.`,
    '',
    `| measure | ${pairs.map((_, i) => `pair ${i + 1}: A → B`).join(' | ')} | B/A, median (range) | server CPU ms per event or row, median A → B (B/A) |`,
    `|---|${pairs.map(() => '---|').join('')}---|---|`,
    ...summary,
    '',
    `Stored rows with a \`mac\`: A ${pairs.map((p) => `${p.a.withMac}/${p.a.stored}`).join(', ')}; B ${pairs.map((p) => `${p.b.withMac}/${p.b.stored}`).join(', ')}.`,
    `In process, over the ${micro.events.toLocaleString('en')} events of B's last export organization (best of 5 passes): \`eventMac\` ${micro.eventMacUs.toFixed(2)} µs per event (the writer's new work; the hashes it covers were computed by the integrator before), ` +
      `\`isOwnStored\` ${micro.isOwnUs.toFixed(2)} µs per row (a read's new work: the leaf commitment, ${micro.leafCommitUs.toFixed(2)} µs alone, and an HMAC), ${micro.isOwnGivenCommitUs.toFixed(2)} µs given the commitment (the integrator's check); every row own: ${micro.allOwn}.`,
    '',
  ];
  recordBenchmark(lines);
  console.log(`\n${lines.join('\n')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
