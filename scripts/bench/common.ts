/** What the benchmark scripts share: starting service processes, loading them, reading their CPU and memory. */
import autocannon from 'autocannon';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { MongoClient } from 'mongodb';
import { ApiKeyRepository } from '../../src/db/apiKeyRepository';
import { collections } from '../../src/db/database';
import { OrgRepository } from '../../src/db/orgRepository';

export const ROOT = join(__dirname, '..', '..');

/**
 * Runs `work` on a git worktree of `commit` (sharing this checkout's node_modules), the baseline side of
 * an A/B, and removes the worktree after; null, with a line saying so, when the commit is not in this
 * clone (a shallow one).
 */
export async function withBaseline<T>(commit: string, what: string, work: (dir: string) => Promise<T>): Promise<T | null> {
  const dir = mkdtempSync(join(tmpdir(), 'audit-ledger-baseline-'));
  try {
    execFileSync('git', ['worktree', 'add', '--detach', dir, commit], { cwd: ROOT, stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    console.log(`${what} skipped: commit ${commit} is not in this clone (git fetch --unshallow)`);
    return null;
  }
  try {
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    return await work(dir);
  } finally {
    execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT, stdio: 'ignore' });
  }
}
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
export const CONNECTIONS = 50;
export const ACTORS = 100;
// Bodies rotate over 100 actors, so a filtered list reads about 1% of the events, as a dashboard would.
export const BODIES = Array.from({ length: ACTORS }, (_, i) => JSON.stringify({
  actor: { id: `user_${i}`, name: 'Jane Admin', email: 'jane@example.com' },
  action: 'user.role_changed',
  resource: { type: 'user', id: 'user_456', name: 'John Doe' },
  metadata: { field: 'role', old_value: 'member', new_value: 'admin', ip: '203.0.113.7' },
}));

/** Plan caps for the benchmark's organizations (all on `enterprise`, with a cap no run reaches). */
export const BENCH_PLAN_CAPS = { free: 10_000, pro: 1_000_000, enterprise: 100_000_000 };

/** Single-event creates (POST /v1/events), rotating over the bodies. */
export function singleEventRequests(): autocannon.Request[] {
  let next = 0;
  return [{ method: 'POST', path: '/v1/events', setupRequest: (req) => ({ ...req, body: BODIES[next++ % ACTORS] }) }];
}

/** The environment of a service process under load: a free metrics port, and no per-key limit in the way. */
export function serviceEnv(uri: string, dbName: string): Record<string, string> {
  return {
    MONGODB_URI: uri,
    MONGODB_DB: dbName,
    LOG_LEVEL: 'info',
    METRICS_PORT: '0',
    // One key sends every request here: the per-key limit is not what this measures.
    RATE_LIMIT_PER_SECOND: '1000000',
    RATE_LIMIT_BURST: '1000000',
    // A key of the benchmark's own: the one in ./data is made for the name `npm start` uses.
    LEDGER_NAME: 'bench.local/ledger',
    LEDGER_SIGNING_KEY_FILE: join(tmpdir(), 'audit-ledger-bench-signing-key'),
  };
}

export interface Proc {
  url: string;
  /** Its Prometheus endpoint, when it logged one (the service does: METRICS_PORT=0 picks a free port). */
  metricsUrl: string | null;
  child: ChildProcess;
}

/**
 * With BENCH_CPU_PROFILE_DIR set, every service process writes a V8 CPU profile on exit, under
 * `<dir>/this` (this checkout) or `<dir>/baseline` (the A/B's other commit), for side-by-side reading.
 * With BENCH_PERF_MAP set, it names its compiled code for Linux perf (/tmp/perf-<pid>.map).
 */
function profilerFlags(cwd: string): string[] {
  const dir = process.env.BENCH_CPU_PROFILE_DIR;
  return [
    ...(dir ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, cwd === ROOT ? 'this' : 'baseline')}`] : []),
    ...(process.env.BENCH_PERF_MAP ? ['--perf-basic-prof'] : []),
  ];
}

/**
 * The Node flags the checkout at `cwd` starts its service with: those its `npm start` gives tsx before
 * `src/main.ts` (a young generation's size since `efb9e5b`, allocation-site pretenuring off since 2026-11-29), so that each checkout is measured as it is
 * run. A start script of another shape is refused rather than guessed at (its flags would be lost).
 */
export function startFlags(cwd: string): string[] {
  const start = (JSON.parse(readFileSync(join(cwd, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }).scripts?.start ?? '';
  const shape = /^tsx((?: --[a-z][a-z0-9-]*(?:=\S+)?)*) src\/main\.ts$/.exec(start.trim());
  if (!shape) throw new Error(`${cwd}: npm start is "${start}"; the benchmarks know "tsx [--node-flag[=value] …] src/main.ts"`);
  return (shape[1] ?? '').split(' ').filter(Boolean);
}

/** Starts `script` of the checkout at `cwd` (this one unless told) and resolves once it listens. */
export async function startProcess(script: string, env: Record<string, string>, cwd = ROOT): Promise<Proc> {
  const flags = script === 'src/main.ts' ? startFlags(cwd) : [];
  const child = spawn(process.execPath, [...flags, ...profilerFlags(cwd), '--import', 'tsx', script], {
    cwd,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout }); // piped above
  const { port, metricsPort } = await new Promise<{ port: number; metricsPort?: number }>((resolve, reject) => {
    child.once('exit', (code) => { reject(new Error(`${script} exited with ${code}`)); });
    lines.on('line', (line) => {
      try {
        const entry = JSON.parse(line) as { port?: number; metricsPort?: number };
        if (entry.port) resolve({ port: entry.port, metricsPort: entry.metricsPort });
      } catch {
        // not JSON
      }
    });
  });
  return { url: `http://127.0.0.1:${port}`, metricsUrl: metricsPort ? `http://127.0.0.1:${metricsPort}/metrics` : null, child };
}

/** A service process on a fresh database `dbName`, with one organization and its key; `close` stops it and drops the database. */
export async function serviceWithKey(uri: string, dbName: string, cwd = ROOT): Promise<{ service: Proc; orgId: string; headers: Record<string, string>; newKey: () => Promise<string>; close: () => Promise<void> }> {
  const service = await startProcess('src/main.ts', serviceEnv(uri, dbName), cwd);
  const client = await MongoClient.connect(uri);
  const c = collections(client.db(dbName));
  const org = await new OrgRepository(c, BENCH_PLAN_CAPS).create({ name: 'Bench', plan: 'enterprise', monthlyCap: 1_000_000_000 }, new Date());
  const { key } = await new ApiKeyRepository(c).forOrg(org._id).create('bench', new Date());
  return {
    service,
    orgId: org._id,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    /** Another key of the organization (one never used: a producer key can still be bound to it). */
    newKey: async () => (await new ApiKeyRepository(c).forOrg(org._id).create('bench', new Date())).key,
    close: async () => {
      await stop(service);
      await client.db(dbName).dropDatabase();
      await client.close();
    },
  };
}

/** Stops a process with SIGTERM; resolves with the milliseconds it took to exit. */
export async function stop(proc: Proc): Promise<number> {
  if (proc.child.exitCode !== null) return 0;
  const started = Date.now();
  proc.child.kill('SIGTERM');
  await once(proc.child, 'exit');
  return Date.now() - started;
}

export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb * 1024;
}

/** Seconds of CPU (user + system) a process (or one of its threads) has used, from /proc: utime and stime, in clock ticks. */
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
export function cpuSecondsOf(pid: number, thread?: number): number {
  const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** CPU seconds spent so far by the database's processes on this machine (FerretDB and PostgreSQL, or mongod), living ones. */
export function databaseCpuSeconds(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const comm = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
      if (comm.startsWith('ferretdb') || comm === 'postgres' || comm === 'mongod') total += cpuSecondsOf(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

/** CPU seconds the whole machine has spent busy so far, all cores (/proc/stat: user, nice, system, irq, softirq). */
export function machineCpuSeconds(): number {
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  return (user + nice + system + irq + softirq) / CLOCK_TICKS;
}

/** Runs a load against a process and measures the CPU it spent per successful request. */
export async function loadWithCpu(pid: number, options: autocannon.Options): Promise<Load & { cpuMsPerRequest: number }> {
  const before = cpuSecondsOf(pid);
  const result = await load(options);
  return { ...result, cpuMsPerRequest: ((cpuSecondsOf(pid) - before) * 1000) / Math.max(1, result.ok) };
}

export interface Load {
  /** Requests answered 2xx. */
  ok: number;
  /** Requests that got no answer within the timeout. */
  timeouts: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

export async function load(options: autocannon.Options): Promise<Load> {
  // A generous timeout: on FerretDB a list or point read scans the collection (see README) and a
  // timed-out request would vanish from the latency figures instead of showing in them.
  const result = await autocannon({ connections: CONNECTIONS, duration: SECONDS, timeout: 60, ...options });
  return {
    ok: result['2xx'],
    timeouts: result.timeouts,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}


/** Where runs go in BENCHMARKS.md: below the summary table, newest first. */
const RUNS_MARKER = '<!-- runs: the scripts add each run below this line, newest first -->';

/** Puts a run's section (starting `## `) at the top of BENCHMARKS.md's runs, below its summary table, which is kept as it is. */
export function recordBenchmark(lines: readonly string[]): void {
  const file = join(ROOT, 'BENCHMARKS.md');
  const previous = readFileSync(file, 'utf8');
  const at = previous.indexOf(RUNS_MARKER);
  if (at < 0) throw new Error(`BENCHMARKS.md has no "${RUNS_MARKER}" line: where would the run go?`);
  const head = previous.slice(0, at + RUNS_MARKER.length);
  writeFileSync(file, `${head}\n\n${lines.join('\n')}\n${previous.slice(at + RUNS_MARKER.length).replace(/^\n+/, '\n')}`);
}

/**
 * A section's heading for BENCHMARKS.md: date, what ran, and the stamp every figure needs to be
 * reproduced: the commit (and whether the tree had uncommitted changes), the database and the machine.
 */
export async function runHeading(uri: string, what: string): Promise<string> {
  const git = (...args: string[]) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' }).stdout.trim();
  const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
  const client = await MongoClient.connect(uri);
  let database: string;
  try {
    const info = (await client.db('admin').command({ buildInfo: 1 })) as { version: string; ferretdbVersion?: string };
    database = info.ferretdbVersion ? `FerretDB ${info.ferretdbVersion}` : `MongoDB ${info.version}`;
  } finally {
    await client.close();
  }
  const { cpus } = await import('node:os');
  return `## ${new Date().toISOString().slice(0, 10)}: ${what} — commit \`${git('rev-parse', '--short', 'HEAD')}\`${dirty ? ' (dirty)' : ''}, ${database}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}`;
}
