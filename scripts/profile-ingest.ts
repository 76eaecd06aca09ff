/**
 * `npm run profile:ingest` (issue 39, "profile first"): one service process with the ledger on, under
 * single-event load (autocannon, CONNECTIONS connections) and then, on a fresh process, under batches of
 * 100, each with V8's CPU profiler on (`--cpu-prof`, through BENCH_CPU_PROFILE_DIR). Prints, for each,
 * the top functions by self time and the time by where the code comes from (Node itself, each library,
 * each folder of ours), as shares of the samples that were not idle; writes them to BENCHMARKS.md. Only
 * the samples taken under the measured load count: the start (tsx compiling the sources) and a 2 s
 * warm-up are left out by their time in the profile. Lines of our sources are not named: tsx's output
 * has other line numbers. Needs MONGODB_URI (`npm run db:ferretdb` prints one).
 */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadBatches } from './bench/batchIngest';
import { CONNECTIONS, loadWithCpu, recordBenchmark, runHeading, SECONDS, serviceWithKey, singleEventRequests } from './bench/common';

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

const WARM_UP_SECONDS = 2;

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
  const { service, headers, close } = await serviceWithKey(uri, `profile_ingest_${Date.now()}`);
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
  const folder = join(dir, 'this');
  const [file] = readdirSync(folder).filter((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written in ${folder}: did the service exit cleanly?`);
  // PROFILE_KEEP=<dir>: the raw profile is kept there too, for Chrome DevTools or speedscope.
  const keep = process.env.PROFILE_KEEP;
  if (keep) copyFileSync(join(folder, file), join(keep, `${label}-${Date.now()}.cpuprofile`));
  return { profile: JSON.parse(readFileSync(join(folder, file), 'utf8')) as Profile, figure, fromMs };
}

type Drive = (url: string, headers: Record<string, string>, pid: number, seconds: number) => Promise<string>;

function table(title: string, rows: [string, number][]): string[] {
  return [`| ${title} | share of busy samples |`, '|---|---|', ...rows.map(([name, share]) => `| \`${name.replace(/\|/g, '\\|')}\` | ${(share * 100).toFixed(1)}% |`)];
}

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('MONGODB_URI is not set (npm run db:ferretdb prints one)');
  const heading = await runHeading(uri, `profile:ingest, ${SECONDS} s of load each, one service process, ledger on, V8 --cpu-prof`);
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
      const { profile, figure, fromMs } = await profiled(uri, dir, name.replace(/ /g, '-'), drive);
      const { functions, origins, samples } = summarize(profile, fromMs);
      const part = [`**${name}**: ${figure}; ${samples.toLocaleString('en')} busy samples.`, '', ...table('function (self time)', functions), '', ...table('where the code comes from (self time)', origins), ''];
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
