/**
 * Whether this process's CPU quota (a cgroup's, as a container's CPU limit sets) throttled it lately:
 * then CPU, not the database's latency, is what limits it. The event loop's utilization cannot tell:
 * a throttled process waits for its next period inside epoll, which counts as idle; and without a
 * quota, gathering rounds on a saturated event loop measured no better here (an uncapped writer lost
 * 7–12% with it), so a process without a quota is never taken for short of CPU.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

/** How often the quota's counters are read again. */
const SAMPLE_MS = 250;

/**
 * Where a process's cgroup `cpu.stat` may be, from its /proc/<pid>/cgroup text: under v1's cpu
 * controller (mounted as `cpu` or as its joint name, `cpu,cpuacct`) or v2's unified tree.
 */
export function cpuStatCandidates(procCgroup: string): string[] {
  const files = procCgroup.split('\n').flatMap((line) => {
    const [, controllers, path] = line.split(':');
    if (path === undefined || controllers === undefined) return [];
    if (controllers === '') return [join('/sys/fs/cgroup', path, 'cpu.stat')];
    return controllers.split(',').includes('cpu') ? [join('/sys/fs/cgroup', controllers, path, 'cpu.stat'), join('/sys/fs/cgroup/cpu', path, 'cpu.stat')] : [];
  });
  return [...new Set(files)];
}

/**
 * How many periods the quota has throttled this process's group in (0 when there is no quota or nothing
 * to read): the first of its `cpu.stat` candidates that can be read.
 */
function throttledPeriods(): number {
  let candidates: string[];
  try {
    candidates = cpuStatCandidates(readFileSync('/proc/self/cgroup', 'utf8'));
  } catch {
    return 0; // not Linux
  }
  for (const file of candidates) {
    let stat: string;
    try {
      stat = readFileSync(file, 'utf8');
    } catch {
      continue; // not mounted there
    }
    return Number(/^nr_throttled (\d+)$/m.exec(stat)?.[1] ?? 0);
  }
  return 0;
}

export class CpuPressure {
  private sample = { at: performance.now(), throttled: throttledPeriods(), short: false };

  /** Whether the quota throttled the process over the last sample (at most SAMPLE_MS old). */
  short(): boolean {
    const now = performance.now();
    if (now - this.sample.at >= SAMPLE_MS) {
      // The group is found again each time: a process can be moved into one after it started (the benchmark does).
      const throttled = throttledPeriods();
      this.sample = { at: now, throttled, short: throttled > this.sample.throttled };
    }
    return this.sample.short;
  }
}
