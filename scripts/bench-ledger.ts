/**
 * `npm run bench:ledger`: only the ledger's ingest A/B (scripts/bench/ledgerAB.ts), recorded in
 * BENCHMARKS.md; BENCH_AB_PAIRS pairs (default 5). Needs MONGODB_URI (FerretDB here: `npm run db:ferretdb`).
 */
import { cpus } from 'node:os';
import { abLines, measureLedgerAB } from './bench/ledgerAB';
import { recordBenchmark } from './bench/common';

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('set MONGODB_URI (npm run db:ferretdb prints one)');
  const result = await measureLedgerAB(uri, `bench_${Date.now()}`, Number(process.env.BENCH_AB_PAIRS ?? 5));
  if (!result) process.exit(1);
  const lines = [`## ${new Date().toISOString().slice(0, 10)}: the ledger's ingest A/B (${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version})`, '', ...abLines(result)];
  recordBenchmark(lines);
  console.log(`\n${lines.join('\n')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
