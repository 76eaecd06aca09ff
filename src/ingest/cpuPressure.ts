/**
 * Whether this process is short of CPU: its CPU quota (a cgroup's, as a container's CPU limit sets)
 * throttled it lately, or, with no quota, its event loop was busy nearly all the time. Either way CPU,
 * not the database's latency, is what limits it. The event loop's utilization alone cannot tell under a
 * quota: a throttled process waits for its next period inside epoll, which counts as idle.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

/** How often the signals are read again. */
const SAMPLE_MS = 250;
/** Without a quota: the share of the time the event loop must have been busy. */
const SATURATED_UTILIZATION = 0.9;

/** This process's cgroup `cpu.stat` (v1's cpu controller or v2's unified tree), if it can be read. */
function cpuStatPath(): string | null {
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, controllers, path] = line.split(':');
      if (path === undefined) continue;
      const candidates = controllers === '' ? [`/sys/fs/cgroup${path}/cpu.stat`] : controllers?.split(',').includes('cpu') ? [`/sys/fs/cgroup/${controllers}${path}/cpu.stat`, `/sys/fs/cgroup/cpu${path}/cpu.stat`] : [];
      for (const file of candidates) {
        try {
          readFileSync(file, 'utf8');
          return file;
        } catch {
          // not mounted there
        }
      }
    }
  } catch {
    // not Linux
  }
  return null;
}

function throttledCount(file: string | null): number {
  if (!file) return 0;
  try {
    return Number(/^nr_throttled (\d+)$/m.exec(readFileSync(file, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

export class CpuPressure {
  private sample = { at: performance.now(), elu: performance.eventLoopUtilization(), throttled: throttledCount(cpuStatPath()), short: false };

  /** Whether the process was short of CPU over the last sample (at most SAMPLE_MS old). */
  short(): boolean {
    const now = performance.now();
    if (now - this.sample.at >= SAMPLE_MS) {
      const elu = performance.eventLoopUtilization();
      // Found again each time: a process can be moved into a group after it started (as the benchmark does).
      const throttled = throttledCount(cpuStatPath());
      const short = throttled > this.sample.throttled || performance.eventLoopUtilization(elu, this.sample.elu).utilization > SATURATED_UTILIZATION;
      this.sample = { at: now, elu, throttled, short };
    }
    return this.sample.short;
  }
}
