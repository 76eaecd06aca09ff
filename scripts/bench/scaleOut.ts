/**
 * Several service processes on one database, as the scale-out issue asks: 1, 2 and 4 processes, first
 * all writing one organization (a hot tenant), then many organizations spread over them. Per run: the
 * events stored per second in all against one process's, each process's share and p99, requests
 * refused or timed out, whether the hot organization's sequence is gapless, and how long each process
 * takes to exit after SIGTERM. Not a test: it prints and records figures.
 */
import type { Parts } from '../../src/services/container';
import { BODIES, CONNECTIONS, load, type Load, type Proc, ROOT, SECONDS, serviceEnv, startProcess, stop } from './common';
import { collections } from '../../src/db/database';

const WARM_UP_SECONDS = 2;

export interface ScaleRun {
  processes: number;
  organizations: number;
  /** Events stored per second, all processes together. */
  perSecond: number;
  perProcess: Load[];
  /** Milliseconds from SIGTERM to exit, per process. */
  exitMs: number[];
  /** Every organization's sequence is 1..n without gaps. */
  gapless: boolean;
}

async function gapless(services: Parts, tenants: string[]): Promise<boolean> {
  for (const tenant of tenants) {
    const count = await collections(services.db).events.countDocuments({ tenant });
    const newest = await collections(services.db).events.findOne({ tenant }, { sort: { seq: -1 }, projection: { seq: 1 } });
    if ((newest?.seq ?? 0) !== count) return false;
  }
  return true;
}

/** One run: `processes` service processes of the checkout at `cwd`, loaded alike, writing `organizations` new organizations. */
export async function scaleRun(uri: string, dbName: string, services: Parts, processes: number, organizations: number, cwd = ROOT): Promise<ScaleRun> {
  const keys: string[] = [];
  const tenants: string[] = [];
  for (let i = 0; i < organizations; i++) {
    const org = await services.stores.orgs.create({ name: `Scale ${processes}×${organizations} #${i}`, plan: 'enterprise', monthlyCap: 1_000_000_000 }, new Date());
    keys.push((await services.stores.apiKeys.forOrg(org._id).create('bench', new Date())).key);
    tenants.push(org._id);
  }
  const procs = await Promise.all(Array.from({ length: processes }, () => startProcess('src/main.ts', serviceEnv(uri, dbName), cwd)));
  let n = 0;
  const loadOf = (proc: Proc, seconds: number) =>
    load({
      url: proc.url,
      duration: seconds,
      connections: Math.max(1, Math.floor(CONNECTIONS / processes)),
      requests: [
        {
          method: 'POST',
          path: '/v1/events',
          setupRequest: (req) => {
            const i = n++;
            return { ...req, headers: { authorization: `Bearer ${keys[i % keys.length] ?? ''}`, 'content-type': 'application/json' }, body: BODIES[i % BODIES.length] };
          },
        },
      ],
    });
  // Steady state, as a deployment runs: the instances have seen each other (a heartbeat is 1 s) and
  // every process has compiled its hot paths under a short load that is not counted. On two cores,
  // four processes starting at once otherwise spend the first seconds of the run compiling.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await Promise.all(procs.map((proc) => loadOf(proc, WARM_UP_SECONDS)));
  const perProcess = await Promise.all(procs.map((proc) => loadOf(proc, SECONDS)));
  const exitMs = await Promise.all(procs.map((proc) => stop(proc)));
  const stored = perProcess.reduce((sum, p) => sum + p.ok, 0);
  return { processes, organizations, perSecond: stored / SECONDS, perProcess, exitMs, gapless: await gapless(services, tenants) };
}

/** The six runs, one after another on one database; each run uses organizations of its own. */
export async function measureScaleOut(uri: string, dbName: string, services: Parts): Promise<ScaleRun[]> {
  const runs: ScaleRun[] = [];
  for (const organizations of [1, 16]) {
    for (const processes of [1, 2, 4]) {
      const result = await scaleRun(uri, dbName, services, processes, organizations);
      runs.push(result);
      console.log(describeRun(result, runs.find((r) => r.organizations === organizations && r.processes === 1) ?? result));
    }
  }
  return runs;
}

/** One line per run, against the one-process run of the same kind. */
export function describeRun(r: ScaleRun, single: ScaleRun): string {
  const p99s = r.perProcess.map((p) => p.p99);
  const singleP99 = Math.max(...single.perProcess.map((p) => p.p99));
  const refused = r.perProcess.reduce((sum, p) => sum + p.non2xx, 0);
  const timeouts = r.perProcess.reduce((sum, p) => sum + p.timeouts, 0);
  return (
    `scale-out ${r.processes} process(es), ${r.organizations} organization(s): ${r.perSecond.toFixed(0)} events/s ` +
    `(${((r.perSecond / single.perSecond) * 100).toFixed(0)}% of one process); per process ${r.perProcess.map((p) => p.ok).join(' / ')} stored, ` +
    `p99 ${p99s.join(' / ')} ms (worst ${(Math.max(...p99s) / Math.max(1, singleP99)).toFixed(1)}× one process); ` +
    `non-2xx ${refused}, timeouts ${timeouts}; exit after SIGTERM ${r.exitMs.join(' / ')} ms; sequences ${r.gapless ? 'gapless' : 'WITH GAPS'}`
  );
}
