/**
 * Where the writer looks for its CPU quota's throttling (src/ingest/cpuPressure.ts): the cgroup
 * `cpu.stat` named by /proc/self/cgroup, on cgroup v1 (the cpu controller alone or joint with cpuacct)
 * and on v2's unified tree. The throttling itself is what `npm run bench:scale` runs under.
 */
import { cpuStatCandidates } from '../../src/ingest/cpuPressure';

describe('cpuStatCandidates', () => {
  test('cgroup v1: the cpu controller, alone or joint with cpuacct, at the process\'s group', () => {
    expect(cpuStatCandidates('4:memory:/a\n1:cpu:/audit-ledger-bench-1\n0::/')).toEqual([
      '/sys/fs/cgroup/cpu/audit-ledger-bench-1/cpu.stat',
      '/sys/fs/cgroup/cpu.stat',
    ]);
    expect(cpuStatCandidates('3:cpu,cpuacct:/kubepods/pod1/c1\n')).toEqual([
      '/sys/fs/cgroup/cpu,cpuacct/kubepods/pod1/c1/cpu.stat',
      '/sys/fs/cgroup/cpu/kubepods/pod1/c1/cpu.stat',
    ]);
  });

  test('cgroup v2: the unified tree', () => {
    expect(cpuStatCandidates('0::/system.slice/audit-ledger.service\n')).toEqual(['/sys/fs/cgroup/system.slice/audit-ledger.service/cpu.stat']);
  });

  test('controllers other than cpu, and lines that are not cgroup lines, name nothing', () => {
    expect(cpuStatCandidates('2:cpuacct:/x\n5:cpuset:/y\n\nnot a line')).toEqual([]);
  });
});
