/**
 * `npm run bench:orgs`: the many-organizations figures alone (scripts/bench/manyOrganizations.ts),
 * recorded in BENCHMARKS.md. BENCH_ORGS_PAIRS runs per side (default 1); BENCH_ORGS_ONLY=size skips the A/B.
 * Needs MONGODB_URI (FerretDB here: `npm run db:ferretdb` prints one).
 */
import { manyOrganizationsLines, measureInstallationSize, measureManyOrganizations } from './bench/manyOrganizations';
import { recordBenchmark, runHeading } from './bench/common';

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('set MONGODB_URI (npm run db:ferretdb prints one)');
  const pairs = Number(process.env.BENCH_ORGS_PAIRS ?? 1);
  const dbName = `bench_${Date.now()}`;
  const size = await measureInstallationSize(uri, `${dbName}_size`);
  const many = process.env.BENCH_ORGS_ONLY === 'size' ? null : await measureManyOrganizations(uri, `${dbName}_many`, pairs);
  const lines = [await runHeading(uri, 'many organizations, `npm run bench:orgs`'), '', ...manyOrganizationsLines(size, many, pairs)];
  recordBenchmark(lines);
  console.log(`\n${lines.join('\n')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
