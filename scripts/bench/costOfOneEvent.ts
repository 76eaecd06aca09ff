/**
 * The cost of one event (issue 39), in alternating pairs: in each pair, the limits (a bare Koa
 * hello-world's CPU per request; raw driver `insertMany` of the same documents into the same indexes, in
 * batches of 50, one in flight, as the writer's rounds of single events come, and in batches of 100),
 * this checkout's service and the service of BEFORE_COMMIT (the commit before the issue's changes), each
 * on a fresh database under single events and then batches of 100. Which of the two services goes first
 * alternates, so a shared machine's drift falls on both. Every ratio is the median of the pairs' ratios.
 *
 * The earlier commit runs with its own node_modules (`npm install` in a worktree): this checkout's patches to
 * libraries (patches/) are part of what is measured, and would otherwise speed up the baseline too.
 */
import { execFileSync } from 'node:child_process';
import { MongoClient } from 'mongodb';
import { BATCH_SIZE, loadBatches } from './batchIngest';
import { CONNECTIONS, loadWithCpu, ROOT, SECONDS, serviceWithKey, singleEventRequests, startProcess, stop, withBaseline } from './common';
import { rawInsert } from './rawInsert';

/** Seconds of the same load before each measured one (BENCH_WARM_SECONDS). */
const WARM_UP_SECONDS = Number(process.env.BENCH_WARM_SECONDS ?? 10);

/** HEAD before issue 39's changes (stop 47). */
export const BEFORE_COMMIT = '71b7177';

export interface ServiceSide {
  single: number;
  singleCpuMs: number;
  batch: number;
  batchCpuMs: number;
}

export interface CostPair {
  helloCpuMs: number;
  helloRps: number;
  /** Raw insertMany, docs/s: batches of CONNECTIONS (what single events' rounds hold) and of BATCH_SIZE. */
  raw50: number;
  raw100: number;
  now: ServiceSide;
  before: ServiceSide | null;
}

async function serviceSide(uri: string, dbName: string, cwd: string): Promise<ServiceSide> {
  const { service, headers, close } = await serviceWithKey(uri, dbName, cwd);
  try {
    const pid = service.child.pid ?? 0;
    // Each load after a warm-up with the same load: V8 keeps compiling a fresh process's hot code for tens
    // of seconds (about a tenth of its CPU in the first 20 s), a cost a long-running service pays once.
    await loadWithCpu(pid, { url: service.url, headers, requests: singleEventRequests(), duration: WARM_UP_SECONDS });
    const single = await loadWithCpu(pid, { url: service.url, headers, requests: singleEventRequests() });
    await loadBatches(service.url, headers, pid, WARM_UP_SECONDS);
    const batch = await loadBatches(service.url, headers, pid);
    if (single.non2xx + single.errors + batch.non2xx + batch.errors > 0) throw new Error(`${cwd}: the load got errors (single ${single.non2xx}/${single.errors}, batches ${batch.non2xx}/${batch.errors})`);
    return { single: single.rps, singleCpuMs: single.cpuMsPerRequest, batch: batch.eventsPerSecond, batchCpuMs: batch.cpuMsPerEvent };
  } finally {
    await close();
  }
}

async function hello(): Promise<{ cpuMs: number; rps: number }> {
  const proc = await startProcess('scripts/bench/helloServer.ts', {});
  try {
    await loadWithCpu(proc.child.pid ?? 0, { url: proc.url, duration: WARM_UP_SECONDS });
    const result = await loadWithCpu(proc.child.pid ?? 0, { url: proc.url });
    return { cpuMs: result.cpuMsPerRequest, rps: result.rps };
  } finally {
    await stop(proc);
  }
}

/** `pairs` pairs; the earlier commit's side is null when it is not in this clone (a shallow one). */
export async function measureCostPairs(uri: string, dbName: string, pairs: number, log: (line: string) => void = console.log): Promise<CostPair[]> {
  const client = await MongoClient.connect(uri);
  // BENCH_COST_NOW=<dir>: "this checkout" is a snapshot elsewhere (a worktree of a tree still being edited).
  const nowDir = process.env.BENCH_COST_NOW ?? ROOT;
  const run = async (before: string | null): Promise<CostPair[]> => {
    const out: CostPair[] = [];
    for (let i = 0; i < pairs; i++) {
      const h = await hello();
      const raw50 = await rawInsert(client, `${dbName}_${i}`, CONNECTIONS, true);
      const raw100 = await rawInsert(client, `${dbName}_${i}`, BATCH_SIZE, true);
      const side = (cwd: string, name: string) => serviceSide(uri, `${dbName}_${i}_${name}`, cwd);
      let now: ServiceSide;
      let earlier: ServiceSide | null = null;
      if (before === null) now = await side(nowDir, 'now');
      else if (i % 2 === 0) {
        earlier = await side(before, 'before');
        now = await side(nowDir, 'now');
      } else {
        now = await side(nowDir, 'now');
        earlier = await side(before, 'before');
      }
      const pair: CostPair = { helloCpuMs: h.cpuMs, helloRps: h.rps, raw50, raw100, now, before: earlier };
      out.push(pair);
      log(`cost pair ${i + 1}: hello ${h.cpuMs.toFixed(3)} ms/req; raw ${raw50.toFixed(0)} / ${raw100.toFixed(0)} docs/s; ` +
        `single ${earlier ? `${earlier.single.toFixed(0)} → ` : ''}${now.single.toFixed(0)} events/s, CPU ${earlier ? `${earlier.singleCpuMs.toFixed(3)} → ` : ''}${now.singleCpuMs.toFixed(3)} ms; ` +
        `batches ${earlier ? `${earlier.batch.toFixed(0)} → ` : ''}${now.batch.toFixed(0)} events/s, CPU ${earlier ? `${earlier.batchCpuMs.toFixed(3)} → ` : ''}${now.batchCpuMs.toFixed(3)} ms`);
    }
    return out;
  };
  try {
    if (process.env.BENCH_COST_BEFORE === 'none') return await run(null);
    const measured = await withBaseline(BEFORE_COMMIT, 'cost of one event A/B', async (dir) => {
      // Its own dependencies, as that commit had them (its lockfile, its patches): `npm install`, as
      // .ci/run installs (it installs exactly the locked versions; see there why not `npm ci`).
      log(`installing ${BEFORE_COMMIT}'s dependencies in its worktree (npm install)…`);
      execFileSync('rm', ['-f', `${dir}/node_modules`]);
      execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, MONGOMS_DISABLE_POSTINSTALL: '1' } });
      return run(dir);
    });
    return measured ?? (await run(null));
  } finally {
    await client.close();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const pct = (r: number) => `${(r * 100).toFixed(0)}%`;
const range = (values: number[], f: (v: number) => string) => `${f(Math.min(...values))}–${f(Math.max(...values))}`;

/** The issue's four figures, each the median over the pairs of a ratio measured within one pair. */
export function costFigures(pairs: CostPair[]): { singleVsRaw: number; batchVsRaw: number; cpuVsHello: number; cpuVsBefore: number | null; batchCpuVsBefore: number | null } {
  const withBefore = pairs.filter((p) => p.before !== null);
  return {
    singleVsRaw: median(pairs.map((p) => p.now.single / p.raw50)),
    batchVsRaw: median(pairs.map((p) => p.now.batch / p.raw100)),
    cpuVsHello: median(pairs.map((p) => p.now.singleCpuMs / p.helloCpuMs)),
    cpuVsBefore: withBefore.length ? median(withBefore.map((p) => p.now.singleCpuMs / (p.before as ServiceSide).singleCpuMs)) : null,
    batchCpuVsBefore: withBefore.length ? median(withBefore.map((p) => p.now.batchCpuMs / (p.before as ServiceSide).batchCpuMs)) : null,
  };
}

/** BENCHMARKS.md lines: the pairs, then the medians the issue reads. */
export function costLines(pairs: CostPair[]): string[] {
  const f = costFigures(pairs);
  const cell = (p: CostPair, pick: (s: ServiceSide) => number, digits: number) => `${p.before ? `${pick(p.before).toFixed(digits)} → ` : ''}${pick(p.now).toFixed(digits)}`;
  const ratios = (pick: (p: CostPair) => number, show: (v: number) => string) => `median ${show(median(pairs.map(pick)))} (${range(pairs.map(pick), show)})`;
  const times = (v: number) => `${v.toFixed(1)}×`;
  return [
    `The cost of one event (issue 39): ${pairs.length} alternating pairs, ${SECONDS} s per load after ${WARM_UP_SECONDS} s of the same load (hello-world included), ${CONNECTIONS} connections for single events, 8 for batches of ${BATCH_SIZE}; ` +
      `each service on a fresh database; \`${BEFORE_COMMIT}\` (before the issue) → this checkout, where shown. CPU: the server process's, per event (hello-world: per request).`,
    '',
    `| pair | hello-world CPU, ms | raw insertMany, docs/s (50 / ${BATCH_SIZE} per call) | single events/s | CPU per single event, ms | batch events/s | CPU per batched event, ms |`,
    '|---|---|---|---|---|---|---|',
    ...pairs.map((p, i) => `| ${i + 1} | ${p.helloCpuMs.toFixed(3)} | ${p.raw50.toFixed(0)} / ${p.raw100.toFixed(0)} | ${cell(p, (s) => s.single, 0)} | ${cell(p, (s) => s.singleCpuMs, 3)} | ${cell(p, (s) => s.batch, 0)} | ${cell(p, (s) => s.batchCpuMs, 3)} |`),
    '',
    `- single events against raw insertMany of 50: ${ratios((p) => p.now.single / p.raw50, pct)}${pairs.every((p) => p.before) ? `; before: ${ratios((p) => (p.before as ServiceSide).single / p.raw50, pct)}` : ''}`,
    `- batches of ${BATCH_SIZE} against raw insertMany of ${BATCH_SIZE}: ${ratios((p) => p.now.batch / p.raw100, pct)}${pairs.every((p) => p.before) ? `; before: ${ratios((p) => (p.before as ServiceSide).batch / p.raw100, pct)}` : ''}`,
    `- CPU per single event against a hello-world request: ${ratios((p) => p.now.singleCpuMs / p.helloCpuMs, times)}${pairs.every((p) => p.before) ? `; before: ${ratios((p) => (p.before as ServiceSide).singleCpuMs / p.helloCpuMs, times)}` : ''}`,
    ...(f.cpuVsBefore === null ? [] : [
      `- CPU per single event against \`${BEFORE_COMMIT}\`: ${ratios((p) => p.now.singleCpuMs / (p.before as ServiceSide).singleCpuMs, pct)}; per batched event: ${ratios((p) => p.now.batchCpuMs / (p.before as ServiceSide).batchCpuMs, pct)}`,
    ]),
    '',
  ];
}
