/**
 * CPU caps for benchmark processes, with Linux cgroup v1's CPU controller: each process gets a group of
 * its own under /sys/fs/cgroup/cpu with a quota per period (25,000 of 100,000 µs: a quarter of a core),
 * so that on a 2-core machine every added instance brings its own CPU, as a new machine would, and the
 * database is not the limit. Needs root (or a delegated cgroup tree).
 */
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup/cpu';
export const PERIOD_US = 100_000;

export class CgroupsUnavailable extends Error {
  override readonly name = 'CgroupsUnavailable';
}

/** Throws CgroupsUnavailable, saying why and what to do, unless groups can be made here. */
export function checkCgroups(): void {
  if (!existsSync(join(ROOT, 'cgroup.procs'))) {
    throw new CgroupsUnavailable(`no cgroup v1 CPU controller at ${ROOT}: this benchmark caps each instance's CPU with one (cgroup v2 machines: run it where v1 is mounted, or set BENCH_SCALE_UNCAPPED=1 for uncapped figures)`);
  }
  const probe = join(ROOT, `audit-ledger-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
  } catch (error) {
    throw new CgroupsUnavailable(`cannot make a cgroup under ${ROOT} (${(error as Error).message}): run the benchmark as root, or set BENCH_SCALE_UNCAPPED=1 for uncapped figures`);
  }
}

/** Puts process `pid` (all its threads) in a new group limited to `quotaUs` per PERIOD_US; returns the group's remover. */
export function capCpu(pid: number, name: string, quotaUs: number): () => void {
  const dir = join(ROOT, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
  writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quotaUs));
  writeFileSync(join(dir, 'cgroup.procs'), String(pid));
  // A group can be removed once its processes have exited.
  return () => {
    try {
      rmdirSync(dir);
    } catch {
      // still busy (the process did not exit): left for the operator, named
      console.warn(`cgroup ${dir} could not be removed`);
    }
  };
}
