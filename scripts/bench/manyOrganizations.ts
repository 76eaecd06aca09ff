/**
 * Many organizations, two questions (issue 20):
 *   - does the size of the installation slow anyone? One organization's ingest (one process, 32
 *     connections, nobody else writing) on a fresh database against the same on a database that holds
 *     1,000 other organizations with a key each;
 *   - what do the ledger's rounds cost when many organizations write? Ingest spread over 1, 16 and 1,000
 *     organizations' keys, three ways in one run: this checkout with its rounds held off (the
 *     checkpoint interval set to an hour: the events are still hashed and receipted, no round runs
 *     while the load lasts), the ledger's rounds as they were (`ROUNDS_BASELINE`, a git worktree
 *     sharing node_modules), and this checkout as it is. The order alternates between pairs.
 * Not a test: it prints figures and returns them for BENCHMARKS.md.
 */
import { MongoClient } from 'mongodb';
import { ApiKeyRepository } from '../../src/db/apiKeyRepository';
import { collections, ensureIndexes } from '../../src/db/database';
import { OrgRepository } from '../../src/db/orgRepository';
import { BENCH_PLAN_CAPS, BODIES, load, type Load, ROOT, SECONDS, serviceEnv, startProcess, stop, withBaseline } from './common';

/** The ledger's per-organization rounds, before one round integrated every due organization (issue 20). */
export const ROUNDS_BASELINE = process.env.BENCH_ROUNDS_BASELINE ?? 'a33d566';
/** The connections of the measurements. */
export const CONNECTIONS = 32;
export const WARM_UP_SECONDS = 2;
export const ORGANIZATION_COUNTS = [1, 16, 1000] as const;
const BYSTANDERS = 1000;
/** Rounds held off for the length of a run: the "without" side of the A/B. */
const NO_ROUNDS = { LEDGER_CHECKPOINT_INTERVAL_MS: '3600000' };

/** Creates `count` organizations with a key each, straight through the repositories; returns the keys. */
export async function organizationsWithKeys(client: MongoClient, dbName: string, count: number, label: string): Promise<string[]> {
  const c = collections(client.db(dbName));
  await ensureIndexes(c);
  const orgs = new OrgRepository(c, BENCH_PLAN_CAPS);
  const keys = new ApiKeyRepository(c);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const org = await orgs.create({ name: `${label} #${i}`, plan: 'enterprise', monthlyCap: 1_000_000_000 }, new Date());
    out.push((await keys.forOrg(org._id).create('bench', new Date())).key);
  }
  return out;
}

/** Single-event writes to `url` for some seconds, `connections` at once, spread evenly over `keys`. */
export function spreadLoad(url: string, keys: readonly string[], connections = CONNECTIONS): (seconds: number) => Promise<Load> {
  let n = 0;
  return (seconds) => load({
    url,
    duration: seconds,
    connections,
    requests: [{
      method: 'POST',
      path: '/v1/events',
      setupRequest: (req) => {
        const i = n++;
        return { ...req, headers: { authorization: `Bearer ${keys[i % keys.length] ?? ''}`, 'content-type': 'application/json' }, body: BODIES[i % BODIES.length] };
      },
    }],
  });
}

/** Events/s stored by one service process of the checkout at `cwd`, with the load spread over `keys`. */
export async function ingestOver(uri: string, dbName: string, keys: string[], cwd: string, env: Record<string, string> = {}): Promise<number> {
  const service = await startProcess('src/main.ts', { ...serviceEnv(uri, dbName), ...env }, cwd);
  try {
    const run = spreadLoad(service.url, keys);
    await run(WARM_UP_SECONDS);
    const measured = await run(SECONDS);
    if (measured.non2xx > 0 || measured.timeouts > 0) console.log(`  (${measured.non2xx} non-2xx, ${measured.timeouts} timeouts)`);
    return measured.ok / SECONDS;
  } finally {
    await stop(service);
  }
}

export interface InstallationSize {
  /** Events/s, the mean over the pairs. */
  fresh: number;
  crowded: number;
  pairs: number;
}

/**
 * One organization's ingest on a fresh installation against the same beside 1,000 others that each have
 * a key: both databases made once, then `pairs` alternating pairs of runs (BENCH_SIZE_PAIRS, default 3).
 */
export async function measureInstallationSize(uri: string, dbName: string, pairs = Number(process.env.BENCH_SIZE_PAIRS ?? 3)): Promise<InstallationSize> {
  const client = await MongoClient.connect(uri);
  try {
    const freshKeys = await organizationsWithKeys(client, `${dbName}_fresh`, 1, 'Fresh');
    await organizationsWithKeys(client, `${dbName}_crowded`, BYSTANDERS, 'Bystander');
    const crowdedKeys = await organizationsWithKeys(client, `${dbName}_crowded`, 1, 'Busy');
    const sum = { fresh: 0, crowded: 0 };
    for (let pair = 0; pair < pairs; pair++) {
      const runs: ['fresh' | 'crowded', string[]][] = [['fresh', freshKeys], ['crowded', crowdedKeys]];
      if (pair % 2 === 1) runs.reverse();
      for (const [side, keys] of runs) sum[side] += await ingestOver(uri, `${dbName}_${side}`, keys, ROOT);
    }
    await client.db(`${dbName}_fresh`).dropDatabase();
    await client.db(`${dbName}_crowded`).dropDatabase();
    const result = { fresh: sum.fresh / pairs, crowded: sum.crowded / pairs, pairs };
    console.log(`installation size: one organization ${result.fresh.toFixed(0)} events/s fresh, ${result.crowded.toFixed(0)} beside ${BYSTANDERS} others (${((result.crowded / result.fresh) * 100).toFixed(0)}%), mean of ${pairs} alternating pairs`);
    return result;
  } finally {
    await client.close();
  }
}

export interface ManyOrganizations {
  organizations: number;
  /** Events/s: rounds held off, the rounds of ROUNDS_BASELINE, this checkout's rounds. */
  without: number;
  before: number;
  after: number;
}

/** The three-way runs per organization count, `pairs` times each; null when the baseline commit is not in this clone. */
export async function measureManyOrganizations(uri: string, dbName: string, pairs: number): Promise<ManyOrganizations[] | null> {
  return withBaseline(ROUNDS_BASELINE, 'many-organizations A/B', async (dir) => {
    const client = await MongoClient.connect(uri);
    try {
      const results: ManyOrganizations[] = [];
      for (const organizations of ORGANIZATION_COUNTS) {
        const sum = { organizations, without: 0, before: 0, after: 0 };
        for (let pair = 0; pair < pairs; pair++) {
          const sides: [keyof Omit<ManyOrganizations, 'organizations'>, string, Record<string, string>][] = [
            ['without', ROOT, NO_ROUNDS],
            ['before', dir, {}],
            ['after', ROOT, {}],
          ];
          if (pair % 2 === 1) sides.reverse();
          for (const [side, cwd, env] of sides) {
            const db = `${dbName}_${organizations}_${pair}_${side}`;
            const keys = await organizationsWithKeys(client, db, organizations, 'Many');
            sum[side] += await ingestOver(uri, db, keys, cwd, env);
            await client.db(db).dropDatabase();
          }
        }
        const result = { organizations, without: sum.without / pairs, before: sum.before / pairs, after: sum.after / pairs };
        console.log(`${organizations} organization(s): ${result.without.toFixed(0)} events/s without rounds, ${result.before.toFixed(0)} with the rounds of ${ROUNDS_BASELINE} (${pct(result.before / result.without)}), ${result.after.toFixed(0)} with this checkout's (${pct(result.after / result.without)})`);
        results.push(result);
      }
      return results;
    } finally {
      await client.close();
    }
  });
}

const pct = (r: number) => `${(r * 100).toFixed(0)}%`;

/** BENCHMARKS.md lines for both measurements. */
export function manyOrganizationsLines(size: InstallationSize | null, many: ManyOrganizations[] | null, pairs: number): string[] {
  return [
    ...(size ? [
      `Installation size: one organization's ingest (one process, ${CONNECTIONS} connections, ${SECONDS} s per run, mean of ${size.pairs} alternating pairs) on a fresh database ${size.fresh.toFixed(0)} events/s, ` +
        `beside ${BYSTANDERS} other organizations with a key each ${size.crowded.toFixed(0)} events/s: **${pct(size.crowded / size.fresh)}**.`,
      '',
    ] : []),
    ...(many ? [
      `Many organizations (one process, ${CONNECTIONS} connections, ${SECONDS} s, the load spread evenly over the organizations' keys; mean of ${pairs} run(s) each, order alternating): events/s`,
      '',
      `| organizations | rounds held off | rounds of \`${ROUNDS_BASELINE}\` (one per organization) | this checkout (one round for all) |`,
      '|---|---|---|---|',
      ...many.map((m) => `| ${m.organizations} | ${m.without.toFixed(0)} | ${m.before.toFixed(0)} (${pct(m.before / m.without)}) | ${m.after.toFixed(0)} (${pct(m.after / m.without)}) |`),
      '',
    ] : []),
  ];
}
