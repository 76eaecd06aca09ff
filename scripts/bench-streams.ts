/**
 * `npm run bench:streams`: what log streams cost and deliver (issue 23), in one run.
 *
 * 1. Ingest A/B: single-event creates (50 connections, one organization) with no stream against five
 *    active webhook streams of that organization (five receivers in this process that acknowledge at
 *    once), in alternating pairs (BENCH_STREAMS_PAIRS, default 2), each on a fresh database. The streams
 *    must keep up (events delivered counted) and the ingest stay ≥ 90% of without.
 * 2. Catch-up: BENCH_STREAMS_BACKLOG events (default 100,000) stored first, then a stream from sequence
 *    1 to a webhook receiver and one to an S3-compatible server (versitygw, built from the Go module
 *    proxy), one after the other: events/s delivered, and the service's memory (RSS) while it catches up.
 *
 * Recorded in BENCHMARKS.md. Needs MONGODB_URI (FerretDB here: `npm run db:ferretdb` prints one).
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MongoClient } from 'mongodb';
import { startS3Server } from '../test/helpers/s3Server';
import { load, recordBenchmark, rssOf, runHeading, SECONDS, serviceEnv, serviceWithKey, singleEventRequests, startProcess, stop } from './bench/common';

const PAIRS = Number(process.env.BENCH_STREAMS_PAIRS ?? 2);
const BACKLOG = Number(process.env.BENCH_STREAMS_BACKLOG ?? 100_000);
const STREAM_ENV = { STREAM_ALLOW_PRIVATE_DESTINATIONS: 'true' };

/**
 * A receiver that acknowledges every batch at once and counts its events from `audit-ledger-sequence`
 * without parsing the body: it shares the machine with the service, and what it spends is not the
 * service's cost.
 */
async function countingReceiver(): Promise<{ url: string; count: () => number; close: () => Promise<void> }> {
  let items = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const [first, last] = String(req.headers['audit-ledger-sequence'] ?? '0-0').split('-').map(Number);
      if (first && last) items += last - first + 1;
      res.writeHead(200).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, count: () => items, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => { resolve(); }); }) };
}

async function post(url: string, headers: Record<string, string>, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  const parsed = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

async function ingestRun(uri: string, streams: number): Promise<{ eventsPerSecond: number; delivered: number; stored: number }> {
  const dbName = `bench_streams_${streams}_${Date.now()}`;
  const { service, headers, close } = await serviceWithKey(uri, dbName);
  // serviceWithKey starts the service without STREAM_ALLOW_PRIVATE_DESTINATIONS: restart it with it.
  await stop(service);
  const withStreams = await startProcess('src/main.ts', { ...serviceEnv(uri, dbName), ...STREAM_ENV });
  const receivers = await Promise.all(Array.from({ length: streams }, () => countingReceiver()));
  try {
    for (const [i, r] of receivers.entries()) await post(withStreams.url, headers, '/v1/streams', { name: `s${i}`, destination: { type: 'webhook', url: r.url } });
    await load({ url: withStreams.url, headers, requests: singleEventRequests(), duration: 3 });
    const measured = await load({ url: withStreams.url, headers, requests: singleEventRequests() });
    // The streams keep up: what they delivered once the load stops (a few seconds to drain).
    const client = await MongoClient.connect(uri);
    const stored = await client.db(dbName).collection('events').countDocuments({});
    await client.close();
    const deadline = Date.now() + 30_000;
    while (streams > 0 && receivers.some((r) => r.count() < stored) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    return { eventsPerSecond: measured.ok / SECONDS, delivered: Math.min(...receivers.map((r) => r.count()), stored), stored };
  } finally {
    await stop(withStreams);
    await Promise.all(receivers.map((r) => r.close()));
    await close();
  }
}

async function catchUp(uri: string): Promise<string[]> {
  const dbName = `bench_streams_backlog_${Date.now()}`;
  const { service, headers, close } = await serviceWithKey(uri, dbName);
  await stop(service);
  const svc = await startProcess('src/main.ts', { ...serviceEnv(uri, dbName), ...STREAM_ENV });
  const lines: string[] = [];
  const s3 = await startS3Server(['bench']);
  const receiver = await countingReceiver();
  try {
    const seedStart = Date.now();
    for (let done = 0; done < BACKLOG; done += 1000) {
      const events = Array.from({ length: Math.min(1000, BACKLOG - done) }, (_, i) => ({ actor: { id: `u${done + i}` }, action: 'invoice.created', resource: { type: 'invoice', id: `inv_${done + i}` }, metadata: { n: done + i } }));
      await post(svc.url, headers, '/v1/events/batch', { events });
    }
    for (;;) {
      const res = await fetch(`${svc.url}/v1/ledger/checkpoint`, { headers });
      if (res.ok && ((await res.json()) as { tree_size: number }).tree_size >= BACKLOG) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    lines.push(`- ${BACKLOG.toLocaleString('en-US')} events stored and signed in ${((Date.now() - seedStart) / 1000).toFixed(1)} s (batches of 1,000).`);
    const destinations = [
      { what: 'the webhook receiver', destination: { type: 'webhook', url: receiver.url }, done: () => Promise.resolve(receiver.count() >= BACKLOG) },
      {
        what: 'the S3 server (versitygw)',
        destination: { type: 's3', endpoint: s3.endpoint, region: s3.region, bucket: 'bench', path_style: true, access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
        done: async (id: string) => ((await (await fetch(`${svc.url}/v1/streams/${id}`, { headers })).json()) as { delivered_seq: number }).delivered_seq >= BACKLOG,
      },
    ];
    const pid = svc.child.pid ?? 0;
    for (const d of destinations) {
      const before = rssOf(pid) / 2 ** 20;
      const started = Date.now();
      const created = await post(svc.url, headers, '/v1/streams', { name: d.what, destination: d.destination, start_seq: 1 });
      let peak = before;
      while (!(await d.done(created.id as string))) {
        peak = Math.max(peak, rssOf(pid) / 2 ** 20);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const seconds = (Date.now() - started) / 1000;
      await fetch(`${svc.url}/v1/streams/${String(created.id)}`, { method: 'DELETE', headers });
      const line = `- back-fill to ${d.what}: ${BACKLOG.toLocaleString('en-US')} events in ${seconds.toFixed(1)} s = **${Math.round(BACKLOG / seconds).toLocaleString('en-US')} events/s**; the service's RSS ${before.toFixed(0)} MB before, at most ${peak.toFixed(0)} MB during.`;
      console.log(line);
      lines.push(line);
    }
  } finally {
    await stop(svc);
    await receiver.close();
    await s3.stop();
    await close();
  }
  return lines;
}

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('MONGODB_URI is required (npm run db:ferretdb prints one for FerretDB)');
  const heading = await runHeading(uri, 'log streams, `npm run bench:streams`');
  const without: number[] = [];
  const with5: number[] = [];
  const notes: string[] = [];
  for (let pair = 0; pair < PAIRS; pair++) {
    const a = await ingestRun(uri, 0);
    const b = await ingestRun(uri, 5);
    without.push(a.eventsPerSecond);
    with5.push(b.eventsPerSecond);
    const line = `- pair ${pair + 1}: ${Math.round(a.eventsPerSecond)} events/s without streams, ${Math.round(b.eventsPerSecond)} with five (${((b.eventsPerSecond / a.eventsPerSecond) * 100).toFixed(0)}%); each stream delivered ${b.delivered.toLocaleString('en-US')} of the ${b.stored.toLocaleString('en-US')} events stored within 30 s of the load's end.`;
    console.log(line);
    notes.push(line);
  }
  const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
  const ratio = sum(with5) / sum(without);
  const catchUpLines = await catchUp(uri);
  recordBenchmark([
    heading,
    '',
    `Single-event ingest (50 connections, ${SECONDS} s after 3 s of warm-up, one organization, the ledger on) with five active webhook streams of that organization against none, ${PAIRS} alternating pairs on fresh databases: **${(ratio * 100).toFixed(0)}%** of the events/s without streams (goal ≥ 90%).`,
    '',
    ...notes,
    '',
    'Catch-up from a backlog, one service process, each stream started at sequence number 1 (one after the other):',
    '',
    ...catchUpLines,
    '',
  ]);
  console.log(`ingest with five streams: ${(ratio * 100).toFixed(0)}% of without`);
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
