/**
 * The cost of one event (issue 39), in pairs: in each pair, raw driver `insertMany` of the same documents
 * into the same indexes (in batches of 50, one in flight, as the writer's rounds of single events come,
 * and in batches of 100); then this checkout's service and the service of BEFORE_COMMIT (the commit
 * before the issue's changes, or BENCH_COST_BEFORE's), both running, each on a fresh database, loaded in
 * turns of a few seconds (ABBA…) under single events and then batches of 100 (measured one after the
 * other, the two sides of a pair differed by up to 30% on this shared machine with the same code); last a
 * bare Koa hello-world's CPU per request, under all the load it takes and then at the rate this
 * checkout's single events came at (which is why it comes last). Every ratio is the median of the pairs'
 * ratios.
 *
 * The earlier commit runs with its own node_modules (`npm install` in a worktree): this checkout's patches to
 * libraries (patches/) are part of what is measured, and would otherwise speed up the baseline too.
 */
import { execFileSync } from 'node:child_process';
import { MongoClient } from 'mongodb';
import { BATCH_SIZE, loadBatches } from './batchIngest';
import { CONNECTIONS, loadWithCpu, ROOT, SECONDS, serviceWithKey, singleEventRequests, startProcess, stop, withBaseline } from './common';
import { rawInsert, rawInserter } from './rawInsert';

/** Seconds of the same load before each measured one (BENCH_WARM_SECONDS). */
const WARM_UP_SECONDS = Number(process.env.BENCH_WARM_SECONDS ?? 10);

/** HEAD before issue 39's changes (stop 47): the issue's "before". */
const ISSUE_BASELINE = '71b7177';
/**
 * The other side of each pair: BENCH_COST_BEFORE=<commit>, `none` for no other side. One commit alone:
 * BENCH_COST_NOW a worktree of it, BENCH_COST_BEFORE its parent.
 */
const BEFORE_COMMIT = process.env.BENCH_COST_BEFORE ?? ISSUE_BASELINE;
const BEFORE_LABEL = BEFORE_COMMIT === ISSUE_BASELINE ? `\`${ISSUE_BASELINE}\`, before the issue` : `\`${BEFORE_COMMIT}\``;

export interface ServiceSide {
  single: number;
  singleCpuMs: number;
  batch: number;
  batchCpuMs: number;
}

export interface CostPair {
  /** A hello-world request's CPU under all the load it takes (50 connections, one core). */
  helloCpuMs: number;
  /**
   * The same, at the rate this checkout stored single events in the pair (2,000–3,000 a second here): a
   * process answering that many requests a second pays more per request than one answering 35,000 (fewer
   * requests per wake-up, per system call, per microtask checkpoint), so this is the like-for-like limit
   * of this checkout's event request (not of the earlier commit's, whose rate is lower).
   */
  helloAtRateCpuMs: number;
  /** Raw insertMany, docs/s: batches of CONNECTIONS (what single events' rounds hold) and of BATCH_SIZE, each measured at the pair's start. */
  raw50: number;
  raw100: number;
  /** Raw insertMany of BATCH_SIZE measured in turns with the services' batches (ABBA, the raw turn first or last): the batches' limit. */
  raw100Turns: number;
  now: ServiceSide;
  before: ServiceSide | null;
}

/** Slices each side's measured load is cut into, taken in turn (ABBA…): both sides meet the same drift of a shared machine. */
const SLICES = 4;

/** A load measured in slices: events per second and the server's CPU per event over all of them. */
interface Tally { ok: number; seconds: number; cpuMs: number }
const tally = (): Tally => ({ ok: 0, seconds: 0, cpuMs: 0 });

/**
 * This checkout's service and the earlier commit's (or this one's alone), each on a fresh database, both
 * running at once, idle but for the load of their turn: warmed up, then measured in turns of
 * SECONDS / SLICES, single events and then batches of 100.
 */
async function serviceSides(uri: string, dbName: string, dirs: { now: string; before: string | null }, pair: number, client: MongoClient): Promise<{ now: ServiceSide; before: ServiceSide | null; raw100Turns: number }> {
  const sides = [await serviceWithKey(uri, `${dbName}_now`, dirs.now), ...(dirs.before ? [await serviceWithKey(uri, `${dbName}_before`, dirs.before)] : [])];
  const raw = await rawInserter(client, `${dbName}_turns`, BATCH_SIZE, true);
  try {
    const single = (side: (typeof sides)[number], seconds: number) => loadWithCpu(side.service.child.pid ?? 0, { url: side.service.url, headers: side.headers, requests: singleEventRequests(), duration: seconds });
    const batches = async (side: (typeof sides)[number], seconds: number) => {
      const result = await loadBatches(side.service.url, side.headers, side.service.child.pid ?? 0, seconds);
      return { ...result, ok: result.ok * BATCH_SIZE, cpuMsPerRequest: result.cpuMsPerEvent };
    };
    const measured: { single: Tally; batch: Tally }[] = sides.map(() => ({ single: tally(), batch: tally() }));
    for (const [kind, drive] of [['single', single], ['batch', batches]] as const) {
      // Each load after a warm-up with the same load: V8 keeps compiling a fresh process's hot code for
      // tens of seconds (about a tenth of its CPU in the first 20 s), a cost a long-running service pays once.
      for (const side of sides) await drive(side, WARM_UP_SECONDS);
      for (let slice = 0; slice < SLICES; slice++) {
        // ABBA…, starting with the other side in every other pair.
        const order = (slice + pair) % 2 === 0 ? sides.map((_, i) => i) : sides.map((_, i) => i).reverse();
        // The batches' limit, raw insertMany of as many, in the same turns: first, then last, in turn.
        const rawFirst = kind === 'batch' && slice % 2 === 0;
        if (rawFirst) await raw.run(SECONDS / SLICES);
        for (const i of order) {
          const side = sides[i] as (typeof sides)[number];
          const result = await drive(side, SECONDS / SLICES);
          if (result.non2xx + result.errors > 0) throw new Error(`${side.service.url}: the load got errors (${result.non2xx} non-2xx, ${result.errors} errors)`);
          const t = (measured[i] as (typeof measured)[number])[kind];
          t.ok += result.ok;
          t.seconds += SECONDS / SLICES;
          t.cpuMs += result.cpuMsPerRequest * Math.max(1, result.ok);
        }
        if (kind === 'batch' && !rawFirst) await raw.run(SECONDS / SLICES);
      }
    }
    const sideOf = (m: (typeof measured)[number]): ServiceSide => ({
      single: m.single.ok / m.single.seconds,
      singleCpuMs: m.single.cpuMs / Math.max(1, m.single.ok),
      batch: m.batch.ok / m.batch.seconds,
      batchCpuMs: m.batch.cpuMs / Math.max(1, m.batch.ok),
    });
    return { now: sideOf(measured[0] as (typeof measured)[number]), before: measured[1] ? sideOf(measured[1]) : null, raw100Turns: raw.perSecond() };
  } finally {
    for (const side of sides) await side.close();
    await raw.close();
  }
}

/** A hello-world's CPU per request under all the load it takes, and at `rate` requests a second. */
async function hello(rate: number): Promise<{ saturated: number; atRate: number }> {
  const proc = await startProcess('scripts/bench/helloServer.ts', {});
  try {
    await loadWithCpu(proc.child.pid ?? 0, { url: proc.url, duration: WARM_UP_SECONDS });
    const saturated = await loadWithCpu(proc.child.pid ?? 0, { url: proc.url });
    const atRate = await loadWithCpu(proc.child.pid ?? 0, { url: proc.url, overallRate: Math.max(1, Math.round(rate)) });
    return { saturated: saturated.cpuMsPerRequest, atRate: atRate.cpuMsPerRequest };
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
      const raw50 = await rawInsert(client, `${dbName}_${i}`, CONNECTIONS, true);
      const raw100 = await rawInsert(client, `${dbName}_${i}`, BATCH_SIZE, true);
      const { now, before: earlier, raw100Turns } = await serviceSides(uri, `${dbName}_${i}`, { now: nowDir, before }, i, client);
      const { saturated: helloCpuMs, atRate: helloAtRateCpuMs } = await hello(now.single);
      const pair: CostPair = { helloCpuMs, helloAtRateCpuMs, raw50, raw100, raw100Turns, now, before: earlier };
      out.push(pair);
      log(`cost pair ${i + 1}: hello ${helloCpuMs.toFixed(3)} ms/req (${helloAtRateCpuMs.toFixed(3)} at ${now.single.toFixed(0)}/s); raw ${raw50.toFixed(0)} / ${raw100.toFixed(0)} docs/s (100 in turns: ${raw100Turns.toFixed(0)}); ` +
        `single ${cell(pair, (s) => s.single, 0)} events/s, CPU ${cell(pair, (s) => s.singleCpuMs, 3)} ms; ` +
        `batches ${cell(pair, (s) => s.batch, 0)} events/s, CPU ${cell(pair, (s) => s.batchCpuMs, 3)} ms`);
    }
    return out;
  };
  try {
    if (BEFORE_COMMIT === 'none') return await run(null);
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

/** A measure of both sides of a pair, `before → now` (now alone without an earlier commit). */
function cell(p: CostPair, pick: (s: ServiceSide) => number, digits: number): string {
  return `${p.before ? `${pick(p.before).toFixed(digits)} → ` : ''}${pick(p.now).toFixed(digits)}`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const pct = (r: number) => `${(r * 100).toFixed(0)}%`;
const range = (values: number[], f: (v: number) => string) => `${f(Math.min(...values))}–${f(Math.max(...values))}`;

/** The issue's four figures, each the median over the pairs of a ratio measured within one pair. */
export function costFigures(pairs: CostPair[]): { singleVsRaw: number; batchVsRaw: number; cpuVsHello: number; cpuVsHelloAtRate: number; cpuVsBefore: number | null; batchCpuVsBefore: number | null } {
  const withBefore = pairs.filter((p) => p.before !== null);
  return {
    singleVsRaw: median(pairs.map((p) => p.now.single / p.raw50)),
    batchVsRaw: median(pairs.map((p) => p.now.batch / p.raw100Turns)),
    cpuVsHello: median(pairs.map((p) => p.now.singleCpuMs / p.helloCpuMs)),
    cpuVsHelloAtRate: median(pairs.map((p) => p.now.singleCpuMs / p.helloAtRateCpuMs)),
    cpuVsBefore: withBefore.length ? median(withBefore.map((p) => p.now.singleCpuMs / (p.before as ServiceSide).singleCpuMs)) : null,
    batchCpuVsBefore: withBefore.length ? median(withBefore.map((p) => p.now.batchCpuMs / (p.before as ServiceSide).batchCpuMs)) : null,
  };
}

/** BENCHMARKS.md lines: the pairs, then the medians the issue reads. */
export function costLines(pairs: CostPair[]): string[] {
  const f = costFigures(pairs);
  const ratios = (pick: (p: CostPair) => number, show: (v: number) => string) => `median ${show(median(pairs.map(pick)))} (${range(pairs.map(pick), show)})`;
  const times = (v: number) => `${v.toFixed(1)}×`;
  return [
    `The cost of one event (issue 39): ${pairs.length} pairs, ${SECONDS} s per load after ${WARM_UP_SECONDS} s of the same load (hello-world included), ${CONNECTIONS} connections for single events, 8 for batches of ${BATCH_SIZE}; ` +
      `the two services (${BEFORE_LABEL} → this checkout, where shown) run at once, each on a fresh database, and are loaded in turns of ${SECONDS / SLICES} s (ABBA). CPU: the server process's, per event (hello-world: per request).`,
    '',
    `| pair | hello-world CPU, ms (at the single events' rate) | raw insertMany, docs/s (50 / ${BATCH_SIZE} per call at the pair's start; ${BATCH_SIZE} in turns with the batches) | single events/s | CPU per single event, ms | batch events/s | CPU per batched event, ms |`,
    '|---|---|---|---|---|---|---|',
    ...pairs.map((p, i) => `| ${i + 1} | ${p.helloCpuMs.toFixed(3)} (${p.helloAtRateCpuMs.toFixed(3)}) | ${p.raw50.toFixed(0)} / ${p.raw100.toFixed(0)}; ${p.raw100Turns.toFixed(0)} | ${cell(p, (s) => s.single, 0)} | ${cell(p, (s) => s.singleCpuMs, 3)} | ${cell(p, (s) => s.batch, 0)} | ${cell(p, (s) => s.batchCpuMs, 3)} |`),
    '',
    `- single events against raw insertMany of 50: ${ratios((p) => p.now.single / p.raw50, pct)}${pairs.every((p) => p.before) ? `; before: ${ratios((p) => (p.before as ServiceSide).single / p.raw50, pct)}` : ''}`,
    `- batches of ${BATCH_SIZE} against raw insertMany of ${BATCH_SIZE} in the same turns: ${ratios((p) => p.now.batch / p.raw100Turns, pct)}${pairs.every((p) => p.before) ? `; before: ${ratios((p) => (p.before as ServiceSide).batch / p.raw100Turns, pct)}` : ''}`,
    `- the same against raw insertMany of ${BATCH_SIZE} measured once at the pair's start (the figure before 2026-11-29's fourth session): ${ratios((p) => p.now.batch / p.raw100, pct)}`,
    `- CPU per single event against a hello-world request: ${ratios((p) => p.now.singleCpuMs / p.helloCpuMs, times)}${pairs.every((p) => p.before) ? `; before: ${ratios((p) => (p.before as ServiceSide).singleCpuMs / p.helloCpuMs, times)}` : ''}`,
    `- the same against a hello-world request at this checkout's single events' rate: ${ratios((p) => p.now.singleCpuMs / p.helloAtRateCpuMs, times)}${pairs.every((p) => p.before) ? `; before, against the same (not at its own, lower, rate): ${ratios((p) => (p.before as ServiceSide).singleCpuMs / p.helloAtRateCpuMs, times)}` : ''}`,
    ...(f.cpuVsBefore === null ? [] : [
      `- CPU per single event against \`${BEFORE_COMMIT}\`: ${ratios((p) => p.now.singleCpuMs / (p.before as ServiceSide).singleCpuMs, pct)}; per batched event: ${ratios((p) => p.now.batchCpuMs / (p.before as ServiceSide).batchCpuMs, pct)}`,
    ]),
    '',
  ];
}
