/**
 * One load spread over many organizations against the same load on one (issue 37): events/s stored by
 * one service process (32 connections, single-event writes, the ledger on), for one organization once
 * warm, and for 1,000 organizations of one installation window by window from their first event: the
 * first window carries each organization's first load (its key, cap, newest event and ledger state are
 * found), the last ones are warm. This checkout against a baseline commit (BENCH_SPREAD_BASELINE, in a
 * git worktree sharing node_modules) in the same run, the order alternating between pairs.
 * Not a test: it prints figures and returns them for BENCHMARKS.md.
 */
import { MongoClient } from 'mongodb';
import { ROOT, serviceEnv, startProcess, stop, withBaseline } from './common';
import { organizationsWithKeys, spreadLoad, WARM_UP_SECONDS } from './manyOrganizations';

/** Before the caps and the authentication shortcut were kept a minute. */
export const SPREAD_BASELINE = process.env.BENCH_SPREAD_BASELINE ?? 'ab22eb6';
const ORGANIZATIONS = 1000;
const WINDOW_SECONDS = 10;
/**
 * Windows of the spread load: the first carries the first load, the last two are the warm figure. Seven
 * windows, so that the warm ones (50-70 s) include a refresh of the caches kept a minute (caps, keys).
 */
const WINDOWS = Number(process.env.BENCH_SPREAD_WINDOWS ?? 7);

export interface Spread {
  /** Events/s: one organization warm; 1,000 organizations in each window, in order. */
  one: number;
  windows: number[];
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
export const warmOf = (s: Spread) => mean(s.windows.slice(-2));
const pct = (r: number) => `${(r * 100).toFixed(0)}%`;

/** One side's figures, the process of the checkout at `cwd` on fresh databases. */
async function measureSide(client: MongoClient, uri: string, dbName: string, cwd: string): Promise<Spread> {
  const oneKeys = await organizationsWithKeys(client, `${dbName}_one`, 1, 'One');
  // One more organization, whose load warms the process up (as the one organization's run is) before the windows.
  const [warmUpKey = '', ...manyKeys] = await organizationsWithKeys(client, `${dbName}_many`, ORGANIZATIONS + 1, 'Many');
  let service = await startProcess('src/main.ts', serviceEnv(uri, `${dbName}_one`), cwd);
  let one: number;
  try {
    const run = spreadLoad(service.url, oneKeys);
    await run(WARM_UP_SECONDS);
    one = (await run(WINDOW_SECONDS)).ok / WINDOW_SECONDS;
  } finally {
    await stop(service);
  }
  service = await startProcess('src/main.ts', serviceEnv(uri, `${dbName}_many`), cwd);
  const windows: number[] = [];
  try {
    await spreadLoad(service.url, [warmUpKey])(WARM_UP_SECONDS);
    const run = spreadLoad(service.url, manyKeys);
    for (let w = 0; w < WINDOWS; w++) windows.push((await run(WINDOW_SECONDS)).ok / WINDOW_SECONDS);
  } finally {
    await stop(service);
  }
  await client.db(`${dbName}_one`).dropDatabase();
  await client.db(`${dbName}_many`).dropDatabase();
  return { one, windows };
}

/** Both sides, `pairs` times each; null when the baseline commit is not in this clone. */
export async function measureSpread(uri: string, dbName: string, pairs: number): Promise<{ baseline: Spread; current: Spread } | null> {
  return withBaseline(SPREAD_BASELINE, 'spread A/B', async (dir) => {
    const client = await MongoClient.connect(uri);
    try {
      const runs: Record<'baseline' | 'current', Spread[]> = { baseline: [], current: [] };
      for (let pair = 0; pair < pairs; pair++) {
        const sides: ['baseline' | 'current', string][] = [['baseline', dir], ['current', ROOT]];
        if (pair % 2 === 1) sides.reverse();
        for (const [side, cwd] of sides) {
          const result = await measureSide(client, uri, `${dbName}_${pair}_${side}`, cwd);
          console.log(`${side}: one organization ${result.one.toFixed(0)} events/s; ${ORGANIZATIONS} organizations by ${WINDOW_SECONDS} s window ${result.windows.map((w) => w.toFixed(0)).join(', ')} (warm ${pct(warmOf(result) / result.one)})`);
          runs[side].push(result);
        }
      }
      const average = (list: Spread[]): Spread => ({ one: mean(list.map((s) => s.one)), windows: (list[0]?.windows ?? []).map((_, w) => mean(list.map((s) => s.windows[w] ?? 0))) });
      return { baseline: average(runs.baseline), current: average(runs.current) };
    } finally {
      await client.close();
    }
  });
}

/** BENCHMARKS.md lines. */
export function spreadLines(result: { baseline: Spread; current: Spread } | null, pairs: number): string[] {
  if (!result) return [];
  const row = (label: string, s: Spread) => `| ${label} | ${s.one.toFixed(0)} | ${s.windows.map((w) => w.toFixed(0)).join(' / ')} | ${pct((s.windows[0] ?? 0) / s.one)} | ${pct(mean(s.windows) / s.one)} | **${pct(warmOf(s) / s.one)}** |`;
  return [
    `One load spread over ${ORGANIZATIONS} organizations against the same on one (one process, 32 connections, single events, the ledger on, each process warmed up ${WARM_UP_SECONDS} s on an organization of its own; one organization: then ${WINDOW_SECONDS} s; ${ORGANIZATIONS} fresh organizations: ${WINDOWS} windows of ${WINDOW_SECONDS} s from their first event; ${pairs > 1 ? `mean of ${pairs} pairs, order alternating` : 'one pair, the baseline first'}): events/s`,
    '',
    `| side | one organization | ${ORGANIZATIONS} organizations, by window | first window | all windows | warm (last two) |`,
    '|---|---|---|---|---|---|',
    row(`\`${SPREAD_BASELINE}\``, result.baseline),
    row('this checkout', result.current),
    '',
  ];
}
