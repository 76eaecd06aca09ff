/**
 * `npm run bench:scale`: what an added instance brings, each instance capped by a cgroup to its own
 * share of CPU (BENCH_SCALE_QUOTA, default 25,000 µs per 100,000: a quarter of a core), as machines of
 * their own would be (issue 22). 1, 2 and 4 instances on one database, the load (128 connections, split
 * evenly over the instances) on one busy organization, then spread over sixteen; the ledger on (its
 * default interval). A/B in one run: this checkout against `BENCH_SCALE_BASELINE` (a git worktree
 * sharing node_modules), the order alternating. Per run: events/s stored, the ratio to one instance of
 * the same side, whether every sequence is gapless, each instance's CPU over the window in cores (the
 * capped instance at its quota is the limit) and the events it answered, and the CPU of the database,
 * of the load generator and of the whole machine (none of which may be the limit for the figures to
 * mean anything). BENCH_SCALE_BASELINE_ENV / BENCH_SCALE_THIS_ENV (`NAME=value,…`) give one side
 * settings of its own, to compare settings on one code (INGEST_WRITERS, say). Recorded in BENCHMARKS.md.
 * Needs MONGODB_URI (FerretDB here: `npm run db:ferretdb` prints one) and root for the cgroups
 * (BENCH_SCALE_UNCAPPED=1 runs without them, for machines that cannot).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { collections } from '../src/db/database';
import { capCpu, checkCgroups } from './bench/cgroup';
import { cpuSecondsOf, databaseCpuSeconds, type Load, machineCpuSeconds, type Proc, recordBenchmark, ROOT, runHeading, SECONDS, serviceEnv, startProcess, stop } from './bench/common';
import { organizationsWithKeys, spreadLoad } from './bench/manyOrganizations';
import { roundRobinLoad } from './bench/roundRobin';

const BASELINE = process.env.BENCH_SCALE_BASELINE ?? '9cb5623';
const QUOTA_US = Number(process.env.BENCH_SCALE_QUOTA ?? 25_000);
const UNCAPPED = process.env.BENCH_SCALE_UNCAPPED === '1';
/** Enough that the instances, not the requests in flight, are the limit (32 left four capped instances waiting on round latency). */
const CONNECTIONS = Number(process.env.BENCH_SCALE_CONNECTIONS ?? 128);
const WARM_UP_SECONDS = 3;
/**
 * How the clients reach the instances: `pinned` (default), each instance its own share of the
 * connections (as clients that keep their connection to one instance); `round-robin`, every request
 * to the next instance in turn (as behind a round-robin load balancer).
 */
const BALANCE = process.env.BENCH_SCALE_BALANCE === 'round-robin' ? 'round-robin' : 'pinned';
const INSTANCES = (process.env.BENCH_SCALE_INSTANCES ?? '1,2,4').split(',').map(Number);
const ORGANIZATIONS = (process.env.BENCH_SCALE_ORGANIZATIONS ?? '1,16').split(',').map(Number);
/** Settings for one side only (`NAME=value,NAME=value`): to compare settings on one code, say INGEST_WRITERS. */
const SIDE_ENV = { baseline: settings(process.env.BENCH_SCALE_BASELINE_ENV), this: settings(process.env.BENCH_SCALE_THIS_ENV) };

function sideSettings(side: Run['side']): string {
  const entries = Object.entries(SIDE_ENV[side]);
  return entries.length === 0 ? '' : ` (${entries.map(([name, value]) => `${name}=${value}`).join(', ')})`;
}

function settings(text: string | undefined): Record<string, string> {
  return Object.fromEntries((text ?? '').split(',').filter(Boolean).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}

interface Run {
  side: 'baseline' | 'this';
  instances: number;
  organizations: number;
  perSecond: number;
  gapless: boolean;
  failed: number;
  /** Each instance's CPU over the measured window, in cores (the cap is QUOTA_US / 100,000). */
  cores: number[];
  /** The database's processes (FerretDB and PostgreSQL here), the load generator (this process) and the whole machine, in cores. */
  rest: { database: number; load: number; machine: number };
  /** Events/s each instance answered (its connections' share: a closed loop gives a faster instance more). */
  answered: number[];
}

/**
 * For one organization on several instances: the CPU the writer spends per event forwarded to it, and
 * what a request costs the others. The others only serve requests (and forward them), so their CPU per
 * request is c = their CPU / the events they answered; the writer serves its own requests too and
 * writes every event: writer CPU = own · c + forwarded · w. (The writer answers more than its share:
 * its clients wait for no forward, and each connection sends its next request on the answer.) An
 * estimate: an instance below its cap spends more per request than one at it (less is batched per
 * wake-up), so c is high and w low; uncapped, w can even come out below zero.
 */
function writerShare(run: Run): { requestMs: number; forwardedMs: number } | null {
  if (run.organizations !== 1 || run.instances < 2) return null;
  const writer = run.cores.indexOf(Math.max(...run.cores));
  const others = run.cores.map((_, i) => i).filter((i) => i !== writer);
  const sum = (ns: number[]) => ns.reduce((a, b) => a + b, 0);
  const requestMs = (sum(others.map((i) => run.cores[i] ?? 0)) / sum(others.map((i) => run.answered[i] ?? 0))) * 1000;
  const own = run.answered[writer] ?? 0;
  const forwardedMs = (((run.cores[writer] ?? 0) - (own * requestMs) / 1000) / (run.perSecond - own)) * 1000;
  return { requestMs, forwardedMs };
}

async function gapless(client: MongoClient, dbName: string): Promise<boolean> {
  const c = collections(client.db(dbName));
  for (const tenant of await c.events.distinct('tenant')) {
    const count = await c.events.countDocuments({ tenant });
    const newest = await c.events.findOne({ tenant }, { sort: { seq: -1 }, projection: { seq: 1 } });
    if ((newest?.seq ?? 0) !== count) return false;
  }
  return true;
}

/** Each instance driven by its own share of the connections (autocannon). */
function pinned(procs: Proc[], keys: string[], instances: number): (seconds: number) => Promise<Load[]> {
  const loads = procs.map((proc) => spreadLoad(proc.url, keys, Math.max(1, Math.floor(CONNECTIONS / instances))));
  return (seconds) => Promise.all(loads.map((run) => run(seconds)));
}

async function run(uri: string, client: MongoClient, side: Run['side'], cwd: string, instances: number, organizations: number, tag: string): Promise<Run> {
  const dbName = `bench_scale_${tag}`;
  const keys = await organizationsWithKeys(client, dbName, organizations, 'Scale');
  const procs: Proc[] = [];
  const releases: (() => void)[] = [];
  try {
    for (let i = 0; i < instances; i++) {
      const proc = await startProcess('src/main.ts', { ...serviceEnv(uri, dbName), ...SIDE_ENV[side] }, cwd);
      procs.push(proc);
      if (!UNCAPPED) releases.push(capCpu(proc.child.pid as number, `audit-ledger-bench-${process.pid}-${tag}-${i}`, QUOTA_US));
    }
    // The instances see each other (a heartbeat is 1 s) before the load.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const drive = BALANCE === 'round-robin' ? roundRobinLoad(procs.map((proc) => proc.url), keys, CONNECTIONS) : pinned(procs, keys, instances);
    await drive(WARM_UP_SECONDS);
    const cpuBefore = procs.map((proc) => cpuSecondsOf(proc.child.pid as number));
    const restBefore = { database: databaseCpuSeconds(), load: cpuSecondsOf(process.pid), machine: machineCpuSeconds() };
    const measured = await drive(SECONDS);
    const cores = procs.map((proc, i) => (cpuSecondsOf(proc.child.pid as number) - (cpuBefore[i] ?? 0)) / SECONDS);
    const rest = { database: (databaseCpuSeconds() - restBefore.database) / SECONDS, load: (cpuSecondsOf(process.pid) - restBefore.load) / SECONDS, machine: (machineCpuSeconds() - restBefore.machine) / SECONDS };
    const stored = measured.reduce((sum, l) => sum + l.ok, 0);
    const failed = measured.reduce((sum, l) => sum + l.non2xx + l.timeouts, 0);
    for (const proc of procs) await stop(proc);
    const result: Run = { side, instances, organizations, perSecond: stored / SECONDS, gapless: await gapless(client, dbName), failed, cores, rest, answered: measured.map((l) => l.ok / SECONDS) };
    return result;
  } finally {
    for (const proc of procs) await stop(proc);
    for (const release of releases) release();
    await client.db(dbName).dropDatabase();
  }
}

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('set MONGODB_URI (npm run db:ferretdb prints one)');
  if (!UNCAPPED) checkCgroups();
  const dir = mkdtempSync(join(tmpdir(), 'audit-ledger-scale-'));
  execFileSync('git', ['worktree', 'add', '--detach', dir, BASELINE], { cwd: ROOT, stdio: 'ignore' });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  const client = await MongoClient.connect(uri);
  const runs: Run[] = [];
  try {
    let turn = 0;
    for (const organizations of ORGANIZATIONS) {
      for (const instances of INSTANCES) {
        const sides: [Run['side'], string][] = [['baseline', dir], ['this', ROOT]];
        if (turn++ % 2 === 1) sides.reverse();
        for (const [side, cwd] of sides) {
          const result = await run(uri, client, side, cwd, instances, organizations, `${Date.now()}_${side}_${instances}_${organizations}`);
          runs.push(result);
          const one = runs.find((r) => r.side === side && r.organizations === organizations && r.instances === 1);
          const share = writerShare(result);
          console.log(`${side}: ${instances} instance(s), ${organizations} organization(s): ${result.perSecond.toFixed(0)} events/s (${one ? ((result.perSecond / one.perSecond)).toFixed(2) : '?'}× one), ${result.failed} failed, ${result.gapless ? 'gapless' : 'WITH GAPS'}; CPU per instance ${result.cores.map((c) => c.toFixed(2)).join(' / ')} cores, events/s answered ${result.answered.map((a) => a.toFixed(0)).join(' / ')}; database ${result.rest.database.toFixed(2)}, load ${result.rest.load.toFixed(2)}, machine ${result.rest.machine.toFixed(2)} of ${cpus().length} cores${share ? `; the writer spends ${share.forwardedMs.toFixed(3)} ms per forwarded event, ${((share.forwardedMs / share.requestMs) * 100).toFixed(0)}% of a request's ${share.requestMs.toFixed(3)} ms` : ''}`);
        }
      }
    }
  } finally {
    await client.close();
    execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT, stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  }
  const cell = (side: Run['side'], instances: number, organizations: number) => {
    const r = runs.find((x) => x.side === side && x.instances === instances && x.organizations === organizations);
    const one = runs.find((x) => x.side === side && x.instances === 1 && x.organizations === organizations);
    if (!r || !one) return '—';
    return `${r.perSecond.toFixed(0)}${instances > 1 ? ` (${(r.perSecond / one.perSecond).toFixed(2)}×)` : ''}${r.gapless ? '' : ' GAPS'}${r.failed ? ` ${r.failed} failed` : ''}; CPU ${r.cores.map((c) => c.toFixed(2)).join('/')}`;
  };
  const lines = [
    await runHeading(uri, `scale-out with each instance capped to ${UNCAPPED ? 'nothing (uncapped)' : `${QUOTA_US / 1000} ms of CPU per 100 ms`}, \`npm run bench:scale\``),
    '',
    `Events/s stored by all instances together (${CONNECTIONS} connections ${BALANCE === 'round-robin' ? 'handing out requests round-robin' : 'split over them'}, ${SECONDS} s after ${WARM_UP_SECONDS} s of warm-up, the ledger on), this checkout${sideSettings('this')} against \`${BASELINE}\`${sideSettings('baseline')}, alternating; every sequence checked gapless:`,
    '',
    `| instances | one organization, \`${BASELINE}\` | one organization, this checkout | sixteen organizations, \`${BASELINE}\` | sixteen organizations, this checkout |`,
    '|---|---|---|---|---|',
    ...INSTANCES.map((i) => `| ${i} | ${cell('baseline', i, 1)} | ${cell('this', i, 1)} | ${cell('baseline', i, 16)} | ${cell('this', i, 16)} |`),
    '',
    ...runs.map((r) => `- ${r.side}, ${r.instances} instance(s), ${r.organizations} organization(s): events/s answered per instance ${r.answered.map((a) => a.toFixed(0)).join(' / ')}; CPU of the database ${r.rest.database.toFixed(2)}, of the load generator ${r.rest.load.toFixed(2)}, of the whole machine ${r.rest.machine.toFixed(2)} of ${cpus().length} cores.`),
    ...runs.flatMap((r) => {
      const share = writerShare(r);
      return share ? [`- ${r.side}, ${r.instances} instances, one organization: the writer spends ${share.forwardedMs.toFixed(3)} ms of CPU per forwarded event, ${((share.forwardedMs / share.requestMs) * 100).toFixed(0)}% of a request's ${share.requestMs.toFixed(3)} ms (from the instances' CPU: the others only serve requests).`] : [];
    }),
    '',
  ];
  recordBenchmark(lines);
  console.log(`\n${lines.join('\n')}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
