/**
 * How a fresh service process's CPU per single event falls as V8 compiles its hot code (issue 39): one
 * process on a fresh database, loaded with single events (50 connections) in consecutive windows of
 * SECONDS, each giving the CPU per event and the share of the process's CPU spent on threads other than
 * the main one (V8 compiling, GC helpers); then a Koa hello-world warmed up as long and loaded at the rate
 * of the last three windows, for the multiple a long-running process pays. The cost pairs (costOfOneEvent.ts)
 * measure from 10 s of load on, in turns of 2.5 s: this says how far that is from the settled figure.
 */
import { readdirSync } from 'node:fs';
import { CONNECTIONS, cpuSecondsOf, loadWithCpu, SECONDS, serviceWithKey, singleEventRequests, startProcess, stop } from './common';

const HELLO_WARM_UP_SECONDS = 30;

export interface WarmUpWindow {
  /** Seconds of load before the window began. */
  after: number;
  eventsPerSecond: number;
  cpuMsPerEvent: number;
  /** Share of the process's CPU in the window spent on its other threads. */
  otherThreads: number;
}

/** CPU seconds of a process's main thread and of its other threads. */
function threadSeconds(pid: number): { main: number; others: number } {
  let main = 0;
  let others = 0;
  for (const thread of readdirSync(`/proc/${pid}/task`).map(Number)) {
    try {
      const seconds = cpuSecondsOf(pid, thread);
      if (thread === pid) main += seconds;
      else others += seconds;
    } catch {
      // a thread that ended meanwhile
    }
  }
  return { main, others };
}

export async function measureWarmUp(uri: string, dbName: string, windows: number): Promise<{ windows: WarmUpWindow[]; helloCpuMs: number }> {
  const side = await serviceWithKey(uri, dbName);
  const pid = side.service.child.pid ?? 0;
  const out: WarmUpWindow[] = [];
  try {
    for (let w = 0; w < windows; w++) {
      const before = threadSeconds(pid);
      const load = await loadWithCpu(pid, { url: side.service.url, headers: side.headers, requests: singleEventRequests(), connections: CONNECTIONS, duration: SECONDS });
      if (load.non2xx + load.errors > 0) throw new Error(`the load got errors (${load.non2xx} non-2xx, ${load.errors} errors)`);
      const after = threadSeconds(pid);
      const others = after.others - before.others;
      out.push({ after: w * SECONDS, eventsPerSecond: load.ok / SECONDS, cpuMsPerEvent: load.cpuMsPerRequest, otherThreads: others / Math.max(1, others + after.main - before.main) });
    }
  } finally {
    await side.close();
  }
  // The hello-world at the settled windows' rate, after as long a warm-up.
  const settled = out.slice(-3);
  const rate = settled.reduce((sum, w) => sum + w.eventsPerSecond, 0) / Math.max(1, settled.length);
  const hello = await startProcess('scripts/bench/helloServer.ts', {});
  try {
    const pidHello = hello.child.pid ?? 0;
    // Its warm-up is 30 s of all the load it takes: far more requests than the service's windows held.
    await loadWithCpu(pidHello, { url: hello.url, duration: HELLO_WARM_UP_SECONDS });
    const atRate = await loadWithCpu(pidHello, { url: hello.url, overallRate: Math.max(1, Math.round(rate)), duration: 3 * SECONDS });
    return { windows: out, helloCpuMs: atRate.cpuMsPerRequest };
  } finally {
    await stop(hello);
  }
}

export function warmUpLines(result: Awaited<ReturnType<typeof measureWarmUp>>): string[] {
  const settled = result.windows.slice(-3);
  const settledCpu = settled.reduce((sum, w) => sum + w.cpuMsPerEvent, 0) / Math.max(1, settled.length);
  const early = result.windows.filter((w) => w.after >= 10 && w.after < 30);
  return [
    `One service process, single events (${CONNECTIONS} connections) in consecutive windows of ${SECONDS} s; CPU: the process's, per event; other threads: V8 compiling and GC helpers.`,
    '',
    '| load before the window, s | events/s | CPU per event, ms | other threads, share of the process |',
    '|---|---|---|---|',
    ...result.windows.map((w) => `| ${w.after} | ${w.eventsPerSecond.toFixed(0)} | ${w.cpuMsPerEvent.toFixed(3)} | ${(w.otherThreads * 100).toFixed(0)}% |`),
    '',
    `- settled (the last ${settled.length} windows): ${settledCpu.toFixed(3)} ms per event, ${(settledCpu / Math.max(1e-9, result.helloCpuMs)).toFixed(1)}× a hello-world request at the same rate after ${HELLO_WARM_UP_SECONDS} s of all the load it takes (${result.helloCpuMs.toFixed(3)} ms)`,
    ...(early.length === 0 ? [] : [`- from 10 s to 30 s of load (where the cost pairs measure): ${(early.reduce((sum, w) => sum + w.cpuMsPerEvent, 0) / early.length).toFixed(3)} ms per event`]),
    '',
  ];
}
