/**
 * `npm run bench:ledger`: the ledger's figures alone, recorded in BENCHMARKS.md: its ingest A/B
 * (scripts/bench/ledgerAB.ts; BENCH_AB_PAIRS pairs, default 5) and the proof latency at 10,000 events
 * against a point read. Needs MONGODB_URI (FerretDB here: `npm run db:ferretdb` prints one).
 */
import { abLines, measureLedgerAB } from './bench/ledgerAB';
import { recordBenchmark, runHeading } from './bench/common';
import { measureProofLatencyAt, PROOF_EVENTS, proofLatencyLine } from './bench/proofLatency';

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('set MONGODB_URI (npm run db:ferretdb prints one)');
  const result = await measureLedgerAB(uri, `bench_${Date.now()}`, Number(process.env.BENCH_AB_PAIRS ?? 5));
  if (!result) process.exit(1);
  const proofs = await measureProofLatencyAt(uri, `bench_${Date.now()}_proofs`, PROOF_EVENTS);
  const lines = [
    await runHeading(uri, 'the ledger, `npm run bench:ledger`'),
    '',
    ...abLines(result),
    proofLatencyLine(PROOF_EVENTS, proofs),
    '',
  ];
  recordBenchmark(lines);
  console.log(`\n${lines.join('\n')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
