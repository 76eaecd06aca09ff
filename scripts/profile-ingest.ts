/**
 * `npm run profile:ingest` (issue 39, "profile first"): one service process with the ledger on, under
 * single-event load (autocannon, CONNECTIONS connections) and then, on a fresh process, under batches of
 * 100, each with V8's CPU profiler on (`--cpu-prof`, through BENCH_CPU_PROFILE_DIR). Prints, for each,
 * the top functions by self time and the time by where the code comes from (Node itself, each library,
 * each folder of ours), as shares of the samples that were not idle; writes them to BENCHMARKS.md. Only
 * the samples taken under the measured load count: the start (tsx compiling the sources) and a 2 s
 * warm-up are left out by their time in the profile. Lines of our sources are not named: tsx's output
 * has other line numbers. Needs MONGODB_URI (`npm run db:ferretdb` prints one).
 *
 * PROFILE_WITH=perf profiles with Linux perf instead (`perf record -g` of the service process, started
 * with `--perf-basic-prof`; Debian's linux-perf package): only time on a CPU counts, and each sample is
 * given to the nearest JavaScript function on its stack, so V8's builtins, the garbage collector's and
 * system calls' time go to the function that caused them; other threads (V8 compiling, GC helpers) are
 * counted apart. V8's own sampler counts time the process spent preempted where it was. PROFILE_CHECKOUT
 * profiles another checkout (a git worktree with its own node_modules), PROFILE_WARM_SECONDS (10) of the
 * same load come first: V8 keeps compiling a fresh process's hot code for tens of seconds.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadBatches } from './bench/batchIngest';
import { CONNECTIONS, loadWithCpu, recordBenchmark, ROOT, runHeading, SECONDS, serviceWithKey, singleEventRequests } from './bench/common';

const TOP = Number(process.env.PROFILE_TOP ?? 15);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  /** Microseconds since the previous sample (the first: since `startTime`). */
  timeDeltas: number[];
}

const WARM_UP_SECONDS = Number(process.env.PROFILE_WARM_SECONDS ?? 10);
const CHECKOUT = process.env.PROFILE_CHECKOUT ?? ROOT;
const WITH_PERF = process.env.PROFILE_WITH === 'perf';

/** Where a function's code comes from: a package, Node itself, V8's own entries, or a folder of ours. */
function originOf(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : '(native)';
  if (url.startsWith('node:')) return 'node: (Node itself)';
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dependency) return dependency[1] as string;
  const ours = /\/src\/([^/]+)\//.exec(url);
  return ours ? `src/${ours[1]}/` : url.replace(/^file:\/\//, '');
}

/** A function's place: a package's file and line, Node's module and line, or our file (tsx's lines are not the source's). */
function placeOf(url: string, line: number): string {
  if (url === '') return '';
  const ours = /\/(src\/.*)$/.exec(url);
  if (ours && !url.includes('node_modules')) return ours[1] as string;
  return `${url.replace(/^file:\/\/.*?\/node_modules\//, '')}:${line + 1}`;
}

/** Self samples from `fromMs` after the profile began, by function and by origin, as shares of the samples not idle. */
function summarize(profile: Profile, fromMs: number): { functions: [string, number][]; origins: [string, number][]; samples: number } {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const counts = new Map<number, number>();
  let at = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (at >= fromMs * 1000) counts.set(id, (counts.get(id) ?? 0) + 1);
  });
  const functions = new Map<string, number>();
  const origins = new Map<string, number>();
  let busy = 0;
  for (const [id, count] of counts) {
    const frame = (byNode.get(id) as ProfileNode).callFrame;
    if (frame.functionName === '(idle)') continue;
    busy += count;
    const name = `${frame.functionName || '(anonymous)'} ${placeOf(frame.url, frame.lineNumber)}`.trim();
    functions.set(name, (functions.get(name) ?? 0) + count);
    const origin = originOf(frame.url, frame.functionName);
    origins.set(origin, (origins.get(origin) ?? 0) + count);
  }
  const ranked = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]).map(([k, v]): [string, number] => [k, v / busy]);
  return { functions: ranked(functions).slice(0, TOP), origins: ranked(origins).slice(0, TOP), samples: busy };
}

/**
 * Runs `drive` against a fresh service process that writes a profile into `dir`, after a warm-up with
 * the same load; returns the profile and when (ms after the process began) the measured load began.
 */
async function profiled(uri: string, dir: string, label: string, drive: Drive): Promise<{ profile: Profile; figure: string; fromMs: number }> {
  process.env.BENCH_CPU_PROFILE_DIR = dir;
  const spawned = Date.now();
  const { service, headers, close } = await serviceWithKey(uri, `profile_ingest_${Date.now()}`, CHECKOUT);
  let figure: string;
  let fromMs: number;
  try {
    await drive(service.url, headers, service.child.pid as number, WARM_UP_SECONDS);
    fromMs = Date.now() - spawned;
    figure = await drive(service.url, headers, service.child.pid as number, SECONDS);
  } finally {
    await close();
    delete process.env.BENCH_CPU_PROFILE_DIR;
  }
  const folder = join(dir, CHECKOUT === ROOT ? 'this' : 'baseline');
  const [file] = readdirSync(folder).filter((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written in ${folder}: did the service exit cleanly?`);
  // PROFILE_KEEP=<dir>: the raw profile is kept there too, for Chrome DevTools or speedscope.
  const keep = process.env.PROFILE_KEEP;
  if (keep) copyFileSync(join(folder, file), join(keep, `${label}-${Date.now()}.cpuprofile`));
  return { profile: JSON.parse(readFileSync(join(folder, file), 'utf8')) as Profile, figure, fromMs };
}

type Drive = (url: string, headers: Record<string, string>, pid: number, seconds: number) => Promise<string>;

/** A perf profile, read: samples by nearest JavaScript function and by origin, as shares of the main thread's. */
interface PerfSummary { functions: [string, number][]; origins: [string, number][]; samples: number; otherThreads: number }

/** PROFILE_WITH=perf: `perf record` of a fresh service process under the measured load (after the warm-up). */
async function perfProfiled(uri: string, dir: string, drive: Drive): Promise<{ summary: PerfSummary; figure: string }> {
  // The JIT's code is named for perf in /tmp/perf-<pid>.map.
  process.env.BENCH_PERF_MAP = '1';
  let started;
  try {
    started = await serviceWithKey(uri, `profile_ingest_${Date.now()}`, CHECKOUT);
  } finally {
    delete process.env.BENCH_PERF_MAP;
  }
  const { service, headers, close } = started;
  const pid = service.child.pid as number;
  const data = join(dir, 'perf.data');
  let figure: string;
  try {
    await drive(service.url, headers, pid, WARM_UP_SECONDS);
    const perf = spawn('perf', ['record', '-F', '999', '-g', '-p', String(pid), '-o', data, '--', 'sleep', String(SECONDS - 1)], { stdio: 'ignore' });
    figure = await drive(service.url, headers, pid, SECONDS);
    await once(perf, 'exit');
  } finally {
    await close();
  }
  const script = spawnSync('perf', ['script', '-i', data], { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (script.status !== 0) throw new Error(`perf script failed: ${script.stderr}`);
  return { summary: readPerf(script.stdout), figure };
}

/** `perf script` text: blocks of a header line (comm, tid, …) and its stack frames, innermost first. */
function readPerf(text: string): PerfSummary {
  const blocks = text.split('\n\n').filter((b) => b.trim() !== '').map((b) => b.split('\n'));
  const byThread = new Map<string, number>();
  for (const b of blocks) { const tid = (b[0] ?? '').trim().split(/\s+/)[1] ?? ''; byThread.set(tid, (byThread.get(tid) ?? 0) + 1); }
  const main = [...byThread].sort((a, b) => b[1] - a[1])[0]?.[0];
  const functions = new Map<string, number>();
  const origins = new Map<string, number>();
  let samples = 0;
  for (const b of blocks) {
    if ((b[0] ?? '').trim().split(/\s+/)[1] !== main) continue;
    samples++;
    // "addr symbol (dso)": the symbol, without its offset.
    const frames = b.slice(1).map((line) => line.trim().replace(/^[0-9a-f]+ /, '').replace(/\+0x[0-9a-f]+ \(.*\)$/, '').replace(/ \(.*\)$/, ''));
    const gc = frames.slice(0, 12).some((f) => /Scaveng|Heap::|MarkCompact/.test(f));
    const js = frames.find((f) => f.startsWith('JS:'));
    let name: string;
    let origin: string;
    if (gc) [name, origin] = ['(garbage collector)', '(garbage collector)'];
    else if (js) {
      // "JS:*name url:line:column" (* optimized, ^ baseline, ~ interpreted)
      const [, fn = '', url = ''] = /^JS:[*^~+]?(\S*) ?(.*)$/.exec(js) ?? [];
      const location = url.replace(/:\d+:\d+$/, '');
      origin = originOf(location.startsWith('/') ? `file://${location}` : location, fn);
      name = `${fn || '(anonymous)'} ${placeOf(location.startsWith('/') ? `file://${location}` : location, Number(/:(\d+):\d+$/.exec(url)?.[1] ?? 1) - 1)}`.trim();
    } else [name, origin] = [`(native) ${frames[0] ?? ''}`.slice(0, 80), '(native, no JavaScript on the stack)'];
    functions.set(name, (functions.get(name) ?? 0) + 1);
    origins.set(origin, (origins.get(origin) ?? 0) + 1);
  }
  const ranked = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]).slice(0, TOP).map(([k, v]): [string, number] => [k, v / samples]);
  return { functions: ranked(functions), origins: ranked(origins), samples, otherThreads: blocks.length - samples };
}

function table(title: string, rows: [string, number][]): string[] {
  return [`| ${title} | share of busy samples |`, '|---|---|', ...rows.map(([name, share]) => `| \`${name.replace(/\|/g, '\\|')}\` | ${(share * 100).toFixed(1)}% |`)];
}

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('MONGODB_URI is not set (npm run db:ferretdb prints one)');
  const what = WITH_PERF ? 'perf record -g (on-CPU samples, nearest JavaScript function)' : 'V8 --cpu-prof';
  const checkout = CHECKOUT === ROOT ? '' : `, the checkout at ${spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: CHECKOUT, encoding: 'utf8' }).stdout.trim()} (PROFILE_CHECKOUT)`;
  const heading = await runHeading(uri, `profile:ingest, ${SECONDS} s of load each after ${WARM_UP_SECONDS} s of the same, one service process${checkout}, ledger on, ${what}`);
  const lines = [heading, ''];
  const runs: [string, Drive][] = [
    ['single events', async (url, headers, pid, seconds) => {
      const result = await loadWithCpu(pid, { url, headers, connections: CONNECTIONS, duration: seconds, requests: singleEventRequests() });
      return `${result.rps.toFixed(0)} events/s, ${CONNECTIONS} connections, ${result.cpuMsPerRequest.toFixed(3)} ms of the service's CPU per event`;
    }],
    ['batches of 100', async (url, headers, pid, seconds) => {
      const result = await loadBatches(url, headers, pid, seconds);
      return `${result.eventsPerSecond.toFixed(0)} events/s, ${result.cpuMsPerEvent.toFixed(3)} ms of the service's CPU per event`;
    }],
  ];
  for (const [name, drive] of runs) {
    const dir = mkdtempSync(join(tmpdir(), 'profile-ingest-'));
    try {
      let part: string[];
      if (WITH_PERF) {
        const { summary, figure } = await perfProfiled(uri, dir, drive);
        const { functions, origins, samples, otherThreads } = summary;
        part = [`**${name}**: ${figure}; ${samples.toLocaleString('en')} samples on the main thread, ${otherThreads.toLocaleString('en')} on others (V8 compiling, GC helpers: ${((otherThreads / (samples + otherThreads)) * 100).toFixed(0)}% of the process's CPU).`, '',
          ...table('nearest JavaScript function (perf, on CPU)', functions).map((l) => l.replace('share of busy samples', 'share of the main thread')), '',
          ...table('where that function comes from', origins).map((l) => l.replace('share of busy samples', 'share of the main thread')), ''];
      } else {
        const { profile, figure, fromMs } = await profiled(uri, dir, name.replace(/ /g, '-'), drive);
        const { functions, origins, samples } = summarize(profile, fromMs);
        part = [`**${name}**: ${figure}; ${samples.toLocaleString('en')} busy samples.`, '', ...table('function (self time)', functions), '', ...table('where the code comes from (self time)', origins), ''];
      }
      process.stdout.write(`${part.join('\n')}\n`);
      lines.push(...part);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  recordBenchmark(lines);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
