/**
 * `npm run bench:ab`: is one change cheaper per single event than its parent? Two copies of each side (A:
 * the commit BENCH_AB_BEFORE, default HEAD, as a git worktree sharing this checkout's node_modules, or the
 * checkout at BENCH_AB_A_DIR; B: this checkout, or BENCH_AB_B_DIR), each on a fresh database, all four
 * loaded AT ONCE with single events (POST /v1/events, 50 connections each; BENCH_AB_RATE=<n> holds each
 * to n requests a second instead), in BENCH_AB_TURNS turns of BENCH_SECONDS after a warm-up of the same.
 * For each turn it prints B's CPU per event against A's (both copies of a side summed), then the median
 * and range of those ratios, and each side's write system calls per event (/proc/<pid>/io).
 *
 * Why at once: loaded one after the other (as `npm run bench`'s cost pairs do, for the issue's figures),
 * the CPU per event of the same code moves by ±10–15% from one 10 s turn to the next on this shared
 * machine, as the database's pace changes how many events each writer's round gathers; loaded together,
 * the sides meet the same pace, and an A/A run's per-turn ratios stay within a few percent. Two copies
 * a side: a process started first measured up to 4% cheaper than its twin (A/A), which the sums even out.
 * What it measures is CPU per event under contention, for comparing two trees, not a figure to set
 * against a hello-world. node_modules is this checkout's on both sides: a change to a patched package
 * is measured by BENCH_AB_A_DIR pointing at a copy whose node_modules has the old patch.
 * BENCH_AB_B_ENV='{"NAME":"value"}': environment for B's processes only (a V8 flag in NODE_OPTIONS, a
 * setting); BENCH_AB_LABEL: what A and B are, for BENCHMARKS.md (default: their checkouts).
 * Needs MONGODB_URI (`npm run db:ferretdb` prints one).
 */
import { readFileSync } from 'node:fs';
import { MongoClient } from 'mongodb';
import { ApiKeyRepository } from '../src/db/apiKeyRepository';
import { collections } from '../src/db/database';
import { OrgRepository } from '../src/db/orgRepository';
import { BENCH_PLAN_CAPS, CONNECTIONS, loadWithCpu, type Proc, recordBenchmark, ROOT, runHeading, SECONDS, serviceEnv, singleEventRequests, startProcess, stop, withBaseline } from './bench/common';

const TURNS = Number(process.env.BENCH_AB_TURNS ?? 6);
const RATE = process.env.BENCH_AB_RATE ? Number(process.env.BENCH_AB_RATE) : undefined;
const B_ENV = JSON.parse(process.env.BENCH_AB_B_ENV ?? '{}') as Record<string, string>;

interface Copy {
  side: 'A' | 'B';
  service: Proc;
  dbName: string;
  headers: Record<string, string>;
}

/** Write system calls a process has made so far (responses, database commands, log writes). */
function writeCalls(pid: number): number {
  return Number(/^syscw: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function compare(uri: string, aDir: string, bDir: string, label: string): Promise<void> {
  const client = await MongoClient.connect(uri);
  const copies: Copy[] = [];
  try {
    for (const [i, side] of (['A', 'B', 'A', 'B'] as const).entries()) {
      const dbName = `bench_ab_${side}${i}_${Date.now()}`;
      const service = await startProcess('src/main.ts', { ...serviceEnv(uri, dbName), ...(side === 'B' ? B_ENV : {}) }, side === 'A' ? aDir : bDir);
      const c = collections(client.db(dbName));
      const org = await new OrgRepository(c, BENCH_PLAN_CAPS).create({ name: 'Bench', plan: 'enterprise', monthlyCap: 1_000_000_000 }, new Date());
      const { key } = await new ApiKeyRepository(c).forOrg(org._id).create('bench', new Date());
      copies.push({ side, service, dbName, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } });
    }
    /** Every copy loaded at once; per side, its CPU per event and write calls per event. */
    const turn = async () => {
      const measured = await Promise.all(copies.map(async (copy) => {
        const pid = copy.service.child.pid as number;
        const writes = writeCalls(pid);
        const load = await loadWithCpu(pid, { url: copy.service.url, headers: copy.headers, requests: singleEventRequests(), connections: CONNECTIONS, duration: SECONDS, ...(RATE ? { overallRate: RATE } : {}) });
        return { side: copy.side, cpuMs: load.cpuMsPerRequest * load.ok, ok: load.ok, writes: writeCalls(pid) - writes, failed: load.non2xx + load.errors + load.timeouts };
      }));
      const of = (side: 'A' | 'B') => {
        const mine = measured.filter((m) => m.side === side);
        const ok = mine.reduce((n, m) => n + m.ok, 0);
        return { cpuMs: mine.reduce((n, m) => n + m.cpuMs, 0) / ok, writes: mine.reduce((n, m) => n + m.writes, 0) / ok, ok, failed: mine.reduce((n, m) => n + m.failed, 0) };
      };
      return { a: of('A'), b: of('B') };
    };
    await turn(); // warm-up
    const ratios: number[] = [];
    const lines: string[] = [];
    for (let t = 1; t <= TURNS; t++) {
      const { a, b } = await turn();
      if (a.failed + b.failed > 0) throw new Error(`turn ${t}: ${a.failed} + ${b.failed} requests failed`);
      ratios.push(b.cpuMs / a.cpuMs);
      const line = `turn ${t}: A ${a.cpuMs.toFixed(3)} ms (${a.ok} events, ${a.writes.toFixed(2)} writes each), B ${b.cpuMs.toFixed(3)} ms (${b.ok}, ${b.writes.toFixed(2)}): B/A ${(100 * b.cpuMs / a.cpuMs).toFixed(1)}%`;
      console.log(line);
      lines.push(`- ${line}`);
    }
    const summary = `CPU per single event, B against A: median **${(100 * median(ratios)).toFixed(1)}%** (${(100 * Math.min(...ratios)).toFixed(1)}–${(100 * Math.max(...ratios)).toFixed(1)}%) over ${TURNS} turns`;
    console.log(summary);
    recordBenchmark([
      await runHeading(uri, 'npm run bench:ab'),
      `A/B of ${process.env.BENCH_AB_LABEL ?? label}${Object.keys(B_ENV).length ? `, B with ${JSON.stringify(B_ENV)}` : ''}: two copies a side, all four loaded at once with single events (${RATE ? `${RATE} requests/s each` : `${CONNECTIONS} connections each`}), ${SECONDS} s turns after one of warm-up; CPU: the service processes', summed per side, per event.`,
      '',
      `- ${summary}`,
      ...lines,
      '',
    ]);
  } finally {
    for (const copy of copies) {
      await stop(copy.service);
      await client.db(copy.dbName).dropDatabase();
    }
    await client.close();
  }
}

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('MONGODB_URI is not set (npm run db:ferretdb prints one)');
  const bDir = process.env.BENCH_AB_B_DIR ?? ROOT;
  const bLabel = process.env.BENCH_AB_B_DIR ? bDir : 'this checkout';
  if (process.env.BENCH_AB_A_DIR) {
    await compare(uri, process.env.BENCH_AB_A_DIR, bDir, `${process.env.BENCH_AB_A_DIR} (A) and ${bLabel} (B)`);
    return;
  }
  const before = process.env.BENCH_AB_BEFORE ?? 'HEAD';
  await withBaseline(before, 'the A/B', (aDir) => compare(uri, aDir, bDir, `\`${before}\` (A) and ${bLabel} (B)`));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
