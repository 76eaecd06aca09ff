/**
 * `npm run bench`: starts the service on a fresh database and measures it with autocannon, next to the
 * limits it should be read against, measured in the same run on the same machine:
 *   - a bare Koa hello-world (what Node + Koa + HTTP can do here at all),
 *   - raw driver insertMany into the same database (what the database can absorb),
 *   - a raw driver cursor read (what the database can hand out).
 *   - the commit before the ledger, A/B against this one (scripts/bench/ledgerAB.ts).
 *   - one organization beside 1,000 others with a key each, against a fresh installation.
 * Every figure is printed as a ratio to its limit and written to BENCHMARKS.md. Not a test: it asserts nothing.
 */
import { totalmem, type as osType, release } from 'node:os';
import { MongoClient } from 'mongodb';
import { collections } from '../src/db/database';
import { costFigures, costLines, measureCostPairs } from './bench/costOfOneEvent';
import { rawInsert } from './bench/rawInsert';
import { measureWarmUp, warmUpLines } from './bench/warmUp';
import { BATCH_SIZE, measureBatchIngest } from './bench/batchIngest';
import { measureFerretReads } from './bench/ferretReads';
import { measureProofLatency } from './bench/proofLatency';
import { abLines, abRows, measureLedgerAB } from './bench/ledgerAB';
import { manyOrganizationsLines, measureInstallationSize } from './bench/manyOrganizations';
import { describeRun, measureScaleOut } from './bench/scaleOut';
import { BENCH_PLAN_CAPS, CONNECTIONS, load, loadWithCpu, type Load, recordBenchmark, rssOf, runHeading, SECONDS, serviceEnv, singleEventRequests, startProcess, stop } from './bench/common';
import { loadConfig } from '../src/config/env';

async function rawRead(client: MongoClient, dbName: string, tenant: string): Promise<{ rows: number; perSecond: number }> {
  const started = Date.now();
  let rows = 0;
  for await (const _doc of client.db(dbName).collection('events').find({ tenant }).sort({ ts: -1, _id: -1 }).batchSize(1000)) rows++;
  return { rows, perSecond: rows / ((Date.now() - started) / 1000) };
}

/** The driver alone, with as many concurrent callers as autocannon has connections: the read limit. */
async function rawConcurrent(query: () => Promise<unknown>): Promise<Load> {
  const latencies: number[] = [];
  const until = Date.now() + SECONDS * 1000;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < until) {
        const t = performance.now();
        await query();
        latencies.push(performance.now() - t);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
  return { ok: latencies.length, timeouts: 0, rps: latencies.length / ((Date.now() - started) / 1000), p50: at(0.5), p99: at(0.99), non2xx: 0, errors: 0 };
}

const ratio = (value: number, limit: number) => (limit > 0 ? value / limit : 0);
const pct = (r: number) => `${(r * 100).toFixed(0)}%`;

async function main(): Promise<void> {
  let uri = process.env.MONGODB_URI;
  let memoryServer: { stop(): Promise<boolean> } | undefined;
  if (!uri) {
    const { MongoMemoryServer } = await import('mongodb-memory-server');
    const server = await MongoMemoryServer.create();
    memoryServer = server;
    uri = server.getUri();
  }
  const dbName = `bench_${Date.now()}`;
  const client = new MongoClient(uri);
  await client.connect();
  const info = (await client.db('admin').command({ buildInfo: 1 })) as { version: string; ferretdbVersion?: string };
  const database = info.ferretdbVersion ? `FerretDB ${info.ferretdbVersion} (PostgreSQL backend), wire version ${info.version}` : `MongoDB ${info.version}`;
  console.log(`database: ${database}; ${SECONDS}s per load, ${CONNECTIONS} connections`);
  const costPairs = Number(process.env.BENCH_COST_PAIRS ?? 3);
  // One measurement alone, a few minutes instead of the whole run (issue 39): the cost of one event's
  // pairs, or how the CPU per event falls while V8 compiles a fresh process's hot code.
  const databaseUri = uri;
  const alone: Record<string, () => Promise<string[]>> = {
    cost: async () => costLines(await measureCostPairs(databaseUri, `${dbName}_cost`, costPairs)),
    warmup: async () => warmUpLines(await measureWarmUp(databaseUri, `${dbName}_warmup`, Number(process.env.BENCH_WARMUP_WINDOWS ?? 9))),
  };
  const only = process.env.BENCH_ONLY;
  const measureAlone = only === undefined ? undefined : alone[only];
  if (measureAlone) {
    const lines = [await runHeading(uri, `\`BENCH_ONLY=${only} npm run bench\``), '', ...(await measureAlone())];
    recordBenchmark(lines);
    console.log(`\n${lines.join('\n')}`);
    await client.close();
    await memoryServer?.stop();
    return;
  }

  // Limits first, on an idle machine.
  const hello = await startProcess('scripts/bench/helloServer.ts', {});
  const helloLoad = await loadWithCpu(hello.child.pid ?? 0, { url: hello.url });
  await stop(hello);
  console.log(`limit  koa hello-world: ${helloLoad.rps.toFixed(0)} req/s, p50 ${helloLoad.p50} ms, p99 ${helloLoad.p99} ms`);
  // The limit: the same documents, the same indexes. The bare figure shows what the indexes cost.
  const rawPerSecond = await rawInsert(client, dbName, CONNECTIONS, true);
  const rawBarePerSecond = await rawInsert(client, dbName, CONNECTIONS, false);
  // The limit for batches: the driver inserting the same batches of 100, one in flight, with the service's indexes.
  const rawBatchPerSecond = await rawInsert(client, dbName, BATCH_SIZE, true);
  // …and in batches as large as the writer's largest round: the most the database takes this way.
  const rawRoundPerSecond = await rawInsert(client, dbName, 1000, true);
  console.log(`limit  raw insertMany (one in flight, j:true, the service's indexes): ${rawBatchPerSecond.toFixed(0)} docs/s in batches of ${BATCH_SIZE}, ${rawRoundPerSecond.toFixed(0)} in batches of 1000`);
  console.log(`limit  raw insertMany (batches of ${CONNECTIONS}, one in flight, j:true): ${rawPerSecond.toFixed(0)} docs/s with the service's indexes, ${rawBarePerSecond.toFixed(0)} docs/s with the sequence index only`);
  const ingestLimit = Math.min(helloLoad.rps, rawPerSecond);

  // The service, on the fresh database.
  // Default log level: one pino line per request, as in production.
  const service = await startProcess('src/main.ts', serviceEnv(uri, dbName));
  const admin = await import('../src/services/container');
  const { createLogger } = await import('../src/logger');
  const services = (await admin.createServices(client.db(dbName), { ...loadConfig({}), planCaps: BENCH_PLAN_CAPS }, { now: () => new Date() }, createLogger('silent'))).parts;
  const org = await services.stores.orgs.create({ name: 'Bench', plan: 'enterprise', monthlyCap: 1_000_000_000 }, new Date());
  const { key } = await services.stores.apiKeys.forOrg(org._id).create('bench', new Date());
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

  const ingest = await loadWithCpu(service.child.pid ?? 0, { url: service.url, headers, requests: singleEventRequests() });
  console.log(`ingest: ${ingest.rps.toFixed(0)} events/s, p50 ${ingest.p50} ms, p99 ${ingest.p99} ms, non-2xx ${ingest.non2xx}, errors ${ingest.errors}; CPU ${ingest.cpuMsPerRequest.toFixed(3)} ms per event (hello-world ${helloLoad.cpuMsPerRequest.toFixed(3)} ms per request)`);

  const ids = (await collections(services.db).events.find({ tenant: org._id }, { projection: { _id: 1 } }).limit(1000).toArray()).map((d) => d._id);
  let next = 0;
  const getById = await load({
    url: service.url,
    headers,
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/v1/events/${ids[next++ % ids.length] ?? 'none'}` }) }],
  });
  console.log(`get by id: ${getById.rps.toFixed(0)} req/s, p50 ${getById.p50} ms, p99 ${getById.p99} ms, non-2xx ${getById.non2xx}`);
  const list = await load({ url: `${service.url}/v1/events?limit=50&actor_id=user_7`, headers });
  console.log(`list (actor filter, 50 per page): ${list.rps.toFixed(0)} req/s, p50 ${list.p50} ms, p99 ${list.p99} ms, non-2xx ${list.non2xx}`);
  const proofs = await measureProofLatency(service.url, headers, ids);
  console.log(`proofs: p50 ${proofs.proof.p50} ms, p99 ${proofs.proof.p99} ms (GET by id ${proofs.get.p50} / ${proofs.get.p99}), non-2xx ${proofs.proof.non2xx}`);
  // The same reads through the driver alone, while the service idles: what the database allows.
  const events = client.db(dbName).collection('events');
  let rawNext = 0;
  const rawGet = await rawConcurrent(() => events.findOne({ _id: ids[rawNext++ % ids.length] as never, tenant: org._id }));
  const rawList = await rawConcurrent(() => events.find({ tenant: org._id, actor_id: 'user_7' }).sort({ ts: -1, _id: -1 }).limit(51).toArray());
  console.log(`limit  raw findOne by id: ${rawGet.rps.toFixed(0)}/s, p99 ${rawGet.p99} ms; raw filtered find: ${rawList.rps.toFixed(0)}/s, p99 ${rawList.p99} ms`);

  const stored = await collections(services.db).events.countDocuments({ tenant: org._id });
  const raw = await rawRead(client, dbName, org._id);
  const rssBefore = rssOf(service.child.pid ?? 0);
  let peakRss = rssBefore;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, rssOf(service.child.pid ?? 0));
  }, 50);
  const exportStarted = Date.now();
  const response = await fetch(`${service.url}/v1/events/export?format=csv`, { headers });
  let bytes = 0;
  let lines = 0;
  if (!response.body) throw new Error('the export answered without a body');
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.length;
    for (const b of value) if (b === 10) lines++;
  }
  clearInterval(sampler);
  const exportSeconds = (Date.now() - exportStarted) / 1000;
  const exportRows = lines; // header + rows, separated by CRLF: one LF per row
  const exportPerSecond = exportRows / exportSeconds;
  console.log(`export csv: ${exportRows} rows (${(bytes / 1e6).toFixed(1)} MB) in ${exportSeconds.toFixed(1)} s = ${exportPerSecond.toFixed(0)} rows/s; raw cursor ${raw.perSecond.toFixed(0)} rows/s; RSS ${(rssBefore / 2 ** 20).toFixed(0)} → peak ${(peakRss / 2 ** 20).toFixed(0)} MiB`);

  // Batches last: the events they add (about ten times the single-event run's) would make the reads and
  // the export above incomparable with earlier runs.
  const batches = await measureBatchIngest(service.url, headers, service.child.pid ?? 0);
  const { batch, batchKeyed, singleKeyed } = batches;
  console.log(`batch ingest (${BATCH_SIZE} per request): ${batch.eventsPerSecond.toFixed(0)} events/s, p50 ${batch.p50} ms, p99 ${batch.p99} ms, non-2xx ${batch.non2xx}; CPU ${batch.cpuMsPerEvent.toFixed(3)} ms per event`);
  console.log(`with an Idempotency-Key per request: batches ${batchKeyed.eventsPerSecond.toFixed(0)} events/s (non-2xx ${batchKeyed.non2xx}), single events ${singleKeyed.rps.toFixed(0)} events/s (non-2xx ${singleKeyed.non2xx})`);
  await stop(service);
  // Several processes on the same database: what the scale-out issue measures.
  const scale = await measureScaleOut(uri, dbName, services);
  // Point reads and list pages as one organization grows, on FerretDB only (see README, "FerretDB").
  const reads = await measureFerretReads(client, uri, dbName, Boolean(info.ferretdbVersion));
  // The size of the installation must not slow anyone: one organization beside 1,000 others with a key each.
  const size = await measureInstallationSize(uri, `${dbName}_size`);
  // The cost of one event against its limits and the commit before issue 39, in pairs (ABBA turns).
  const cost = await measureCostPairs(uri, `${dbName}_cost`, costPairs);
  const costs = costFigures(cost);
  // Last and longest: the ledger's cost to ingest, against the code before it (A/B pairs).
  const ab = await measureLedgerAB(uri, dbName, Number(process.env.BENCH_AB_PAIRS ?? 3));
  await client.db(dbName).dropDatabase();
  await client.close();
  await memoryServer?.stop();

  const rows: [string, string, string, string][] = [
    ['ingest, events/s (POST /v1/events)', ingest.rps.toFixed(0), `${ingestLimit.toFixed(0)} (slower of the two limits)`, pct(ratio(ingest.rps, ingestLimit))],
    ['ingest vs Koa hello-world', ingest.rps.toFixed(0), helloLoad.rps.toFixed(0), pct(ratio(ingest.rps, helloLoad.rps))],
    ['ingest vs raw insertMany (service indexes)', ingest.rps.toFixed(0), rawPerSecond.toFixed(0), pct(ratio(ingest.rps, rawPerSecond))],
    ['ingest vs raw insertMany (sequence index only)', ingest.rps.toFixed(0), rawBarePerSecond.toFixed(0), pct(ratio(ingest.rps, rawBarePerSecond))],
    ['ingest CPU per event, ms (server process)', ingest.cpuMsPerRequest.toFixed(3), `${helloLoad.cpuMsPerRequest.toFixed(3)} (hello-world, per request)`, `${ratio(ingest.cpuMsPerRequest, helloLoad.cpuMsPerRequest).toFixed(1)}×`],
    ['ingest p50 / p99, ms', `${ingest.p50} / ${ingest.p99}`, `${helloLoad.p50} / ${helloLoad.p99} (hello-world)`, `${(ratio(ingest.p99, helloLoad.p99)).toFixed(1)}× p99`],
    ['ingest with an Idempotency-Key per request, events/s', singleKeyed.rps.toFixed(0), `${ingest.rps.toFixed(0)} (without keys)`, pct(ratio(singleKeyed.rps, ingest.rps))],
    [`batch ingest, events/s (POST /v1/events/batch, ${BATCH_SIZE} per request)`, batch.eventsPerSecond.toFixed(0), `${rawBatchPerSecond.toFixed(0)} (raw insertMany, batches of ${BATCH_SIZE})`, pct(ratio(batch.eventsPerSecond, rawBatchPerSecond))],
    [`batch ingest, events/s, against the writer's largest round`, batch.eventsPerSecond.toFixed(0), `${rawRoundPerSecond.toFixed(0)} (raw insertMany, batches of 1000)`, pct(ratio(batch.eventsPerSecond, rawRoundPerSecond))],
    ['batch ingest with an Idempotency-Key per request, events/s', batchKeyed.eventsPerSecond.toFixed(0), `${rawBatchPerSecond.toFixed(0)} (raw insertMany, batches of ${BATCH_SIZE})`, pct(ratio(batchKeyed.eventsPerSecond, rawBatchPerSecond))],
    ['batch ingest p50 / p99 per request, ms; CPU per event, ms', `${batch.p50} / ${batch.p99}; ${batch.cpuMsPerEvent.toFixed(3)}`, `${ingest.cpuMsPerRequest.toFixed(3)} (CPU per single-event create)`, `${ratio(batch.cpuMsPerEvent, ingest.cpuMsPerRequest).toFixed(2)}× CPU`],
    ['GET /v1/events/:id, req/s', getById.rps.toFixed(0), `${rawGet.rps.toFixed(0)} (raw driver findOne)`, pct(ratio(getById.rps, rawGet.rps))],
    ['GET /v1/events/:id p50 / p99, ms', `${getById.p50} / ${getById.p99}`, `${rawGet.p50} / ${rawGet.p99} (raw driver)`, `${ratio(getById.p99, rawGet.p99).toFixed(1)}× p99`],
    ['GET /v1/events/:id/proof p50 / p99, ms (one at a time)', `${proofs.proof.p50} / ${proofs.proof.p99}`, `${proofs.get.p50} / ${proofs.get.p99} (GET /v1/events/:id, one at a time)`, `${ratio(proofs.proof.p50, proofs.get.p50).toFixed(1)}× p50`],
    ['GET /v1/events?actor_id= (≤50 rows), req/s', list.rps.toFixed(0), `${rawList.rps.toFixed(0)} (raw driver find)`, pct(ratio(list.rps, rawList.rps))],
    ['GET /v1/events p50 / p99, ms', `${list.p50} / ${list.p99}`, `${rawList.p50} / ${rawList.p99} (raw driver)`, `${ratio(list.p99, rawList.p99).toFixed(1)}× p99`],
    ['export CSV, rows/s', exportPerSecond.toFixed(0), `${raw.perSecond.toFixed(0)} (raw driver cursor)`, pct(ratio(exportPerSecond, raw.perSecond))],
    ...scale.map((r): [string, string, string, string] => {
      const single = scale.find((s) => s.organizations === r.organizations && s.processes === 1) ?? r;
      const label = `${r.processes} process${r.processes > 1 ? 'es' : ''}, ${r.organizations === 1 ? 'one organization' : `${r.organizations} organizations`}: events/s`;
      return [label, r.perSecond.toFixed(0), `${single.perSecond.toFixed(0)} (one process)`, pct(ratio(r.perSecond, single.perSecond))];
    }),
    ...(reads ?? []).flatMap((f): [string, string, string, string][] => {
      const k = `${f.events / 1000}k events`;
      const row = (what: string, [gin, bare]: [number, number]): [string, string, string, string] => [`FerretDB ${what} at ${k}, median ms`, String(gin), `${bare} (without the GIN indexes)`, `${ratio(gin, bare).toFixed(2)}×`];
      return [row('GET /v1/events/:id', f.byId), row('first page, actor filter', f.listByActor), row('first page, no filter', f.listAll)];
    }),
    [`single-event ingest vs raw insertMany of ${CONNECTIONS}, median of ${cost.length} pairs`, '', '', pct(costs.singleVsRaw)],
    [`batch ingest vs raw insertMany of ${BATCH_SIZE}, median of ${cost.length} pairs`, '', '', pct(costs.batchVsRaw)],
    [`CPU per single event vs a hello-world request, median of ${cost.length} pairs`, '', '', `${costs.cpuVsHello.toFixed(1)}×`],
    [`CPU per single event vs a hello-world request at the same rate, median of ${cost.length} pairs`, '', '', `${costs.cpuVsHelloAtRate.toFixed(1)}×`],
    ...(ab ? abRows(ab) : []),
    ['export peak RSS, MiB', (peakRss / 2 ** 20).toFixed(0), `${(rssBefore / 2 ** 20).toFixed(0)} (before the export)`, `+${((peakRss - rssBefore) / 2 ** 20).toFixed(0)} MiB for ${exportRows} rows`],
  ];
  const heading = await runHeading(uri, '`npm run bench`');
  const lines2 = [
    `${heading}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${osType()} ${release()}`,
    '',
    `Database: ${database}. Load: autocannon, ${CONNECTIONS} connections, ${SECONDS} s per run, on the same machine as the server. ${stored} events stored by the ingest run; the export read them all.`,
    '',
    '| measure | value | limit (same run) | ratio |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
    'Several processes on one database (per process: events stored, p99; exit after SIGTERM):',
    '',
    ...scale.map((r) => `- ${describeRun(r, scale.find((s) => s.organizations === r.organizations && s.processes === 1) ?? r)}`),
    '',
    ...manyOrganizationsLines(size, null, 0),
    ...costLines(cost),
    ...(ab ? abLines(ab) : []),
  ];
  recordBenchmark(lines2);
  console.log(`\n${lines2.join('\n')}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
