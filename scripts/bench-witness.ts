/**
 * `npm run bench:witness`: what witnessing costs (issue 21). Ingest spread over 1, 100 and 1,000
 * organizations' keys (one process, 32 connections), witnesses off against on (one `audit-ledger witness
 * serve` on this machine, a fresh one per run, the policy's quorum that witness), in alternating pairs
 * (BENCH_WITNESS_PAIRS, default 2). From the service's own metrics over the measured window: the rounds,
 * and the time each spent on the organizations' logs and on the installation log (appending their
 * checkpoints as entries and signing one installation checkpoint). Recorded in BENCHMARKS.md.
 * Needs MONGODB_URI (FerretDB here: `npm run db:ferretdb` prints one).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { recordBenchmark, ROOT, runHeading, SECONDS, serviceEnv, startProcess, stop } from './bench/common';
import { CONNECTIONS, organizationsWithKeys, spreadLoad, WARM_UP_SECONDS } from './bench/manyOrganizations';

const COUNTS = [1, 100, 1000];
const PAIRS = Number(process.env.BENCH_WITNESS_PAIRS ?? 2);
/** serviceEnv's LEDGER_NAME: the installation log's origin is `<name>/installation`. */
const ORIGIN = 'bench.local/ledger/installation';

interface Run {
  eventsPerSecond: number;
  rounds: number;
  organizationMs: number;
  installationMs: number;
  cosigned: number;
}

async function metrics(url: string | null): Promise<Record<string, number>> {
  if (!url) throw new Error('the service logged no metrics port');
  const text = await (await fetch(url)).text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const match = /^(\w+) ([0-9.e+-]+)$/.exec(line);
    if (match) out[match[1] as string] = Number(match[2]);
  }
  return out;
}

/** Our witness on a free port with a fresh state, following the benchmark's installation log. */
async function startWitness(dir: string, verifierKey: string): Promise<{ url: string; vkey: string; stop: () => Promise<void> }> {
  writeFileSync(join(dir, 'witness.config'), `log ${ORIGIN} ${verifierKey}\n`);
  rmSync(join(dir, 'witness.state'), { force: true });
  const child = spawn(process.execPath, ['bin/audit-ledger.cjs', 'witness', 'serve', '--key', join(dir, 'witness.key'), '--name', 'bench.witness', '--config', join(dir, 'witness.config'), '--state', join(dir, 'witness.state'), '--listen', '127.0.0.1:0'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const { url, vkey } = await new Promise<{ url: string; vkey: string }>((resolve, reject) => {
    child.once('exit', (code) => { reject(new Error(`witness exited with ${code}`)); });
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const key = /verifier key[^:]*: (\S+)/.exec(out);
      const listening = /Listening on (http:\/\/\S+)\/add-checkpoint/.exec(out);
      if (key && listening) resolve({ url: listening[1] as string, vkey: key[1] as string });
    });
  });
  return { url, vkey, stop: async () => { child.kill('SIGTERM'); await once(child, 'exit'); } };
}

async function verifierKeyOf(uri: string, dbName: string): Promise<string> {
  // The benchmark's key file is made by the first service start; its verifier key is logged then.
  const service = await startProcess('src/main.ts', { ...serviceEnv(uri, dbName), LEDGER_CHECKPOINT_INTERVAL_MS: '3600000' });
  await stop(service);
  const { readFileSync } = await import('node:fs');
  const { parsePrivateKey } = await import('../src/domain/ledger/note');
  return parsePrivateKey(readFileSync(serviceEnv(uri, dbName).LEDGER_SIGNING_KEY_FILE as string, 'utf8')).text;
}

async function run(uri: string, dbName: string, keys: string[], env: Record<string, string>): Promise<Run> {
  const service = await startProcess('src/main.ts', { ...serviceEnv(uri, dbName), ...env });
  try {
    const drive = spreadLoad(service.url, keys);
    await drive(WARM_UP_SECONDS);
    const before = await metrics(service.metricsUrl);
    const measured = await drive(SECONDS);
    const after = await metrics(service.metricsUrl);
    const delta = (name: string) => (after[name] ?? 0) - (before[name] ?? 0);
    if (measured.non2xx > 0 || measured.timeouts > 0) console.log(`  (${measured.non2xx} non-2xx, ${measured.timeouts} timeouts)`);
    return {
      eventsPerSecond: measured.ok / SECONDS,
      rounds: delta('ledger_rounds_total'),
      organizationMs: delta('ledger_round_organizations_seconds_total') * 1000,
      installationMs: delta('ledger_round_installation_seconds_total') * 1000,
      cosigned: delta('ledger_witness_cosignatures_total'),
    };
  } finally {
    await stop(service);
  }
}

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('set MONGODB_URI (npm run db:ferretdb prints one)');
  const dir = mkdtempSync(join(tmpdir(), 'bench-witness-'));
  const client = await MongoClient.connect(uri);
  const base = `bench_${Date.now()}`;
  const rows: string[] = [];
  try {
    const verifierKey = await verifierKeyOf(uri, `${base}_key`);
    await client.db(`${base}_key`).dropDatabase();
    for (const count of COUNTS) {
      const sum = { off: [] as Run[], on: [] as Run[] };
      for (let pair = 0; pair < PAIRS; pair++) {
        const sides: ('off' | 'on')[] = pair % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
        for (const side of sides) {
          const db = `${base}_${count}_${pair}_${side}`;
          const keys = await organizationsWithKeys(client, db, count, 'Witnessed');
          const witness = side === 'on' ? await startWitness(dir, verifierKey) : null;
          try {
            let env: Record<string, string> = {};
            if (witness) {
              writeFileSync(join(dir, 'policy'), `witness w ${witness.vkey} ${witness.url}\nquorum w\n`);
              env = { LEDGER_WITNESS_POLICY: join(dir, 'policy') };
            }
            const result = await run(uri, db, keys, env);
            sum[side].push(result);
            console.log(`${count} organization(s), witnesses ${side}: ${result.eventsPerSecond.toFixed(0)} events/s; ${result.rounds} rounds, ${(result.organizationMs / Math.max(1, result.rounds)).toFixed(1)} ms on organizations' logs and ${(result.installationMs / Math.max(1, result.rounds)).toFixed(1)} ms on the installation log per round; ${result.cosigned} cosignatures`);
          } finally {
            await witness?.stop();
            await client.db(db).dropDatabase();
          }
        }
      }
      const mean = (runs: Run[], f: (r: Run) => number) => runs.reduce((a, r) => a + f(r), 0) / runs.length;
      const perRound = (runs: Run[], f: (r: Run) => number) => runs.reduce((a, r) => a + f(r), 0) / Math.max(1, runs.reduce((a, r) => a + r.rounds, 0));
      const off = mean(sum.off, (r) => r.eventsPerSecond);
      const on = mean(sum.on, (r) => r.eventsPerSecond);
      rows.push(`| ${count} | ${off.toFixed(0)} | ${on.toFixed(0)} (${((on / off) * 100).toFixed(0)}%) | ${perRound(sum.off, (r) => r.organizationMs).toFixed(1)} / ${perRound(sum.off, (r) => r.installationMs).toFixed(1)} | ${perRound(sum.on, (r) => r.organizationMs).toFixed(1)} / ${perRound(sum.on, (r) => r.installationMs).toFixed(1)} | ${mean(sum.on, (r) => r.cosigned / SECONDS).toFixed(1)} |`);
    }
  } finally {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const lines = [
    await runHeading(uri, 'witnessing, `npm run bench:witness`'),
    '',
    `Ingest spread over the organizations' keys (one process, ${CONNECTIONS} connections, ${SECONDS} s per run, mean of ${PAIRS} alternating pairs), witnesses off against on (one \`witness serve\` on this machine); per ledger round, the time spent on the organizations' logs / on the installation log (appending their checkpoints and signing one installation checkpoint), from the service's metrics:`,
    '',
    '| organizations | events/s, witnesses off | events/s, witnesses on | ms per round off (orgs / installation) | ms per round on (orgs / installation) | cosignatures/s |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
  ];
  recordBenchmark(lines);
  console.log(`\n${lines.join('\n')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
