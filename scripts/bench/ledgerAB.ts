/**
 * What the ledger costs ingest, A/B in one run: the commit before the ledger (a git worktree sharing
 * this checkout's node_modules) and this checkout, started in turn on fresh databases of one server and
 * loaded alike: single events, batches of 100, then the scale-out runs (one and two processes on one
 * database, for one hot organization and for 16). The pairs alternate which goes first, so the drift
 * of a shared machine falls on both. There is no switch that turns the ledger off (README), so the
 * code without it is the baseline. `npm run bench` runs it last; `npm run bench:ledger` alone.
 */
import { MongoClient } from 'mongodb';
import { createLogger } from '../../src/logger';
import { createServices } from '../../src/services/container';
import { BATCH_SIZE, loadBatches } from './batchIngest';
import { BENCH_PLAN_CAPS, loadWithCpu, ROOT, SECONDS, serviceWithKey, singleEventRequests, withBaseline } from './common';
import { type ScaleRun, scaleRun } from './scaleOut';
import { loadConfig } from '../../src/config/env';

/** The last commit before the ledger: issue 10's fuzz change, just before the first ledger commit. */
export const BASELINE_COMMIT = '7c74f65';

export interface Side {
  single: number;
  singleCpuMs: number;
  batch: number;
  batchCpuMs: number;
  /** Per SCALE_ORGANIZATIONS, the scale-out runs on one process and on two. */
  scale: { one: ScaleRun; two: ScaleRun }[];
}

/** The scale-out runs' organizations: one hot organization, then many. */
const SCALE_ORGANIZATIONS = [1, 16] as const;

export interface ABResult {
  pairs: { without: Side; with: Side }[];
}

/** One side of a pair: the checkout at `cwd` on fresh databases named after `dbName`. */
async function measure(uri: string, dbName: string, cwd: string): Promise<Side> {
  return { ...(await measureIngest(uri, dbName, cwd)), scale: await measureScale(uri, `${dbName}_scale`, cwd) };
}

async function measureIngest(uri: string, dbName: string, cwd: string): Promise<Omit<Side, 'scale'>> {
  const { service, headers, close } = await serviceWithKey(uri, dbName, cwd);
  try {
    const pid = service.child.pid ?? 0;
    const single = await loadWithCpu(pid, { url: service.url, headers, requests: singleEventRequests() });
    const batch = await loadBatches(service.url, headers, pid);
    return { single: single.rps, singleCpuMs: single.cpuMsPerRequest, batch: batch.eventsPerSecond, batchCpuMs: batch.cpuMsPerEvent };
  } finally {
    await close();
  }
}

async function measureScale(uri: string, dbName: string, cwd: string): Promise<Side['scale']> {
  const client = await MongoClient.connect(uri);
  try {
    const services = (await createServices(client.db(dbName), { ...loadConfig({}), planCaps: BENCH_PLAN_CAPS }, { now: () => new Date() }, createLogger('silent'))).parts;
    const runs: Side['scale'] = [];
    for (const organizations of SCALE_ORGANIZATIONS) {
      const one = await scaleRun(uri, dbName, services, 1, organizations, cwd);
      runs.push({ one, two: await scaleRun(uri, dbName, services, 2, organizations, cwd) });
    }
    return runs;
  } finally {
    await client.db(dbName).dropDatabase();
    await client.close();
  }
}

/** Runs `pairs` A/B pairs, or null when the baseline commit is not in this clone's history (a shallow clone). */
export async function measureLedgerAB(uri: string, dbName: string, pairs: number): Promise<ABResult | null> {
  return withBaseline(BASELINE_COMMIT, 'ledger A/B', async (dir) => {
    const result: ABResult = { pairs: [] };
    for (let i = 0; i < pairs; i++) {
      const run = (cwd: string, side: string) => measure(uri, `${dbName}_ab${i}_${side}`, cwd);
      let without: Side;
      let withLedger: Side;
      if (i % 2 === 0) {
        without = await run(dir, 'without');
        withLedger = await run(ROOT, 'with');
      } else {
        withLedger = await run(ROOT, 'with');
        without = await run(dir, 'without');
      }
      result.pairs.push({ without, with: withLedger });
      console.log(`ledger A/B pair ${i + 1}: single ${without.single.toFixed(0)} → ${withLedger.single.toFixed(0)} events/s, batches ${without.batch.toFixed(0)} → ${withLedger.batch.toFixed(0)} events/s, ` +
        `two processes ${SCALE_ORGANIZATIONS.map((n, k) => `(${n} org.) ${runs(without, k).two.perSecond.toFixed(0)} → ${runs(withLedger, k).two.perSecond.toFixed(0)}`).join(', ')} events/s`);
    }
    return result;
  });
}

const pct = (r: number) => `${(r * 100).toFixed(0)}%`;
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The with/without ratios of a measure: summed over the pairs, and the median of the pairs' ratios. */
export function abRatios(result: ABResult, pick: (side: Side) => number): { summed: number; median: number } {
  return {
    summed: sum(result.pairs.map((p) => pick(p.with))) / sum(result.pairs.map((p) => pick(p.without))),
    median: median(result.pairs.map((p) => pick(p.with) / pick(p.without))),
  };
}

/** The main table's rows: each measure's events/s summed over the pairs, with and without the ledger. */
export function abRows(result: ABResult): [string, string, string, string][] {
  const measures: [string, (side: Side) => number][] = [['single events', (s) => s.single], [`batches of ${BATCH_SIZE}`, (s) => s.batch]];
  return measures.map(([what, pick]): [string, string, string, string] => {
    const r = abRatios(result, pick);
    return [
      `ingest with the ledger, ${what}: events/s summed over ${result.pairs.length} A/B pairs`,
      sum(result.pairs.map((p) => pick(p.with))).toFixed(0),
      `${sum(result.pairs.map((p) => pick(p.without))).toFixed(0)} (the commit before the ledger)`,
      `${pct(r.summed)} (median pair ${pct(r.median)})`,
    ];
  }).concat(SCALE_ORGANIZATIONS.map((organizations, k): [string, string, string, string] => {
    const two = (side: Side) => runs(side, k).two.perSecond;
    return [
      `two processes, ${organizations === 1 ? 'one organization' : `${organizations} organizations`}, with the ledger: events/s summed over ${result.pairs.length} A/B pairs`,
      sum(result.pairs.map((p) => two(p.with))).toFixed(0),
      `${sum(result.pairs.map((p) => two(p.without))).toFixed(0)} (the commit before the ledger)`,
      pct(abRatios(result, two).summed),
    ];
  }));
}

/** BENCHMARKS.md lines: a table of the pairs and the two ratios the issue's 90% target reads. */
export function abLines(result: ABResult): string[] {
  const single = abRatios(result, (s) => s.single);
  const batch = abRatios(result, (s) => s.batch);
  const cell = (p: { without: Side; with: Side }, pick: (s: Side) => number) =>
    `${pick(p.without).toFixed(0)} → ${pick(p.with).toFixed(0)} (${pct(pick(p.with) / pick(p.without))})`;
  return [
    `Ingest with the ledger against the commit before it (\`${BASELINE_COMMIT}\`), ${result.pairs.length} alternating pairs on fresh databases, ${SECONDS} s per load (events/s, without → with; CPU per event in ms):`,
    '',
    `| pair | single events | CPU | batches of ${BATCH_SIZE} | CPU |`,
    '|---|---|---|---|---|',
    ...result.pairs.map((p, i) =>
      `| ${i + 1} | ${cell(p, (s) => s.single)} | ${p.without.singleCpuMs.toFixed(3)} → ${p.with.singleCpuMs.toFixed(3)} | ${cell(p, (s) => s.batch)} | ${p.without.batchCpuMs.toFixed(3)} → ${p.with.batchCpuMs.toFixed(3)} |`),
    `| summed | ${pct(single.summed)} | | ${pct(batch.summed)} | |`,
    `| median ratio | ${pct(single.median)} | | ${pct(batch.median)} | |`,
    '',
    ...scaleLines(result),
  ];
}

function runs(side: Side, k: number): Side['scale'][number] {
  const run = side.scale[k];
  if (!run) throw new Error(`no scale-out runs for ${SCALE_ORGANIZATIONS[k]} organizations`);
  return run;
}

/** Two processes against one on each side of the pairs: does the ledger change how the service scales out? */
function scaleLines(result: ABResult): string[] {
  const cell = (side: Side, k: number) => {
    const { one, two } = runs(side, k);
    return `${two.perSecond.toFixed(0)} (${pct(two.perSecond / one.perSecond)})`;
  };
  const scaling = (pick: (p: ABResult['pairs'][number]) => Side, k: number) =>
    sum(result.pairs.map((p) => runs(pick(p), k).two.perSecond)) / sum(result.pairs.map((p) => runs(pick(p), k).one.perSecond));
  const all = result.pairs.flatMap((p) => [p.with, p.without]).flatMap((side) => side.scale.flatMap((s) => [s.one, s.two]));
  const worstP99 = (pick: (p: ABResult['pairs'][number]) => Side) =>
    median(result.pairs.flatMap((p) => pick(p).scale.map((s) => Math.max(...s.two.perProcess.map((l) => l.p99)) / Math.max(1, ...s.one.perProcess.map((l) => l.p99)))));
  return [
    `Two service processes on one database in the same pairs, ${SECONDS} s per run (events/s stored by both, without → with; in brackets, against one process of the same checkout):`,
    '',
    `| pair | ${SCALE_ORGANIZATIONS.map((n) => (n === 1 ? 'one organization' : `${n} organizations`)).join(' | ')} |`,
    `|---|${SCALE_ORGANIZATIONS.map(() => '---').join('|')}|`,
    ...result.pairs.map((p, i) => `| ${i + 1} | ${SCALE_ORGANIZATIONS.map((_, k) => `${cell(p.without, k)} → ${cell(p.with, k)}`).join(' | ')} |`),
    `| summed | ${SCALE_ORGANIZATIONS.map((_, k) => `${pct(abRatios(result, (s) => runs(s, k).two.perSecond).summed)} with the ledger; two processes against one: ${pct(scaling((p) => p.without, k))} → ${pct(scaling((p) => p.with, k))}`).join(' | ')} |`,
    '',
    `All ${all.length} runs: sequences ${all.every((r) => r.gapless) ? 'gapless' : 'WITH GAPS'}, non-2xx ${sum(all.flatMap((r) => r.perProcess.map((l) => l.non2xx)))}, ` +
      `timeouts ${sum(all.flatMap((r) => r.perProcess.map((l) => l.timeouts)))}; the worse process's p99 on two processes against one process's, median: ` +
      `${worstP99((p) => p.without).toFixed(1)}× without the ledger, ${worstP99((p) => p.with).toFixed(1)}× with it.`,
    '',
  ];
}
