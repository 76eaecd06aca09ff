/**
 * What the ledger costs ingest, A/B in one run: the commit before the ledger (a git worktree sharing
 * this checkout's node_modules) and this checkout, started in turn on fresh databases of one server and
 * loaded alike, single events then batches of 100. The pairs alternate which goes first, so the drift
 * of a shared machine falls on both. There is no switch that turns the ledger off (README), so the
 * code without it is the baseline. `npm run bench` runs it last; `npm run bench:ledger` alone.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BATCH_SIZE, loadBatches } from './batchIngest';
import { loadWithCpu, ROOT, SECONDS, serviceWithKey, singleEventRequests } from './common';

/** The last commit before the ledger: issue 10's fuzz change, just before the first ledger commit. */
export const BASELINE_COMMIT = '7c74f65';

export interface Side {
  single: number;
  singleCpuMs: number;
  batch: number;
  batchCpuMs: number;
}

export interface ABResult {
  pairs: { without: Side; with: Side }[];
}

async function measure(uri: string, dbName: string, cwd: string): Promise<Side> {
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

/** Runs `pairs` A/B pairs, or null when the baseline commit is not in this clone's history (a shallow clone). */
export async function measureLedgerAB(uri: string, dbName: string, pairs: number): Promise<ABResult | null> {
  const dir = mkdtempSync(join(tmpdir(), 'audit-ledger-baseline-'));
  try {
    execFileSync('git', ['worktree', 'add', '--detach', dir, BASELINE_COMMIT], { cwd: ROOT, stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    console.log(`ledger A/B skipped: commit ${BASELINE_COMMIT} is not in this clone (git fetch --unshallow)`);
    return null;
  }
  try {
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
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
      console.log(`ledger A/B pair ${i + 1}: single ${without.single.toFixed(0)} → ${withLedger.single.toFixed(0)} events/s, batches ${without.batch.toFixed(0)} → ${withLedger.batch.toFixed(0)} events/s`);
    }
    return result;
  } finally {
    execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT, stdio: 'ignore' });
  }
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
  return measures.map(([what, pick]) => {
    const r = abRatios(result, pick);
    return [
      `ingest with the ledger, ${what}: events/s summed over ${result.pairs.length} A/B pairs`,
      sum(result.pairs.map((p) => pick(p.with))).toFixed(0),
      `${sum(result.pairs.map((p) => pick(p.without))).toFixed(0)} (the commit before the ledger)`,
      `${pct(r.summed)} (median pair ${pct(r.median)})`,
    ];
  });
}

/** BENCHMARKS.md lines: a table of the pairs and the two ratios the 90% target reads. */
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
  ];
}
