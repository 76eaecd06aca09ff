/**
 * `npm run bench:orgs`: the many-organizations figures (recorded in BENCHMARKS.md):
 *   - installation size: one organization beside 1,000 others (scripts/bench/manyOrganizations.ts);
 *   - one load spread over 1,000 organizations against one, first load and warm, this checkout against
 *     BENCH_SPREAD_BASELINE (scripts/bench/spreadOrganizations.ts);
 *   - with BENCH_ORGS_ROUNDS=1, also the ledger rounds' three-way A/B of issue 20 (1 / 16 / 1,000
 *     organizations, rounds held off against ROUNDS_BASELINE's and this checkout's).
 * BENCH_ORGS_PAIRS runs per side (default 1); BENCH_ORGS_ONLY=size skips the A/Bs.
 * Needs MONGODB_URI (FerretDB here: `npm run db:ferretdb` prints one).
 */
import { manyOrganizationsLines, measureInstallationSize, measureManyOrganizations } from './bench/manyOrganizations';
import { measureSpread, spreadLines } from './bench/spreadOrganizations';
import { recordBenchmark, runHeading } from './bench/common';

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('set MONGODB_URI (npm run db:ferretdb prints one)');
  const pairs = Number(process.env.BENCH_ORGS_PAIRS ?? 1);
  const dbName = `bench_${Date.now()}`;
  const onlySize = process.env.BENCH_ORGS_ONLY === 'size';
  const size = await measureInstallationSize(uri, `${dbName}_size`);
  const spread = onlySize ? null : await measureSpread(uri, `${dbName}_spread`, pairs);
  const many = onlySize || process.env.BENCH_ORGS_ROUNDS !== '1' ? null : await measureManyOrganizations(uri, `${dbName}_many`, pairs);
  const lines = [await runHeading(uri, 'many organizations, `npm run bench:orgs`'), '', ...manyOrganizationsLines(size, many, pairs), ...spreadLines(spread, pairs)];
  recordBenchmark(lines);
  console.log(`\n${lines.join('\n')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
