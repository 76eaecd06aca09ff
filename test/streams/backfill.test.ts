/**
 * A stream started at sequence number 1 on an organization with 50,000 events (STREAM_BACKFILL_EVENTS
 * to change it; BENCHMARKS.md's figures are at 100,000): the server process delivering it back-fills the
 * whole log, in order, with nothing missing, in bounded memory (one batch per stream at a time, whatever
 * the backlog): the process runs with its heap capped (HEAP_CAP_MB) below what keeping the back-fill's
 * events would take, so a back-fill that kept them would die of it. Prints the catch-up rate and the
 * process's RSS. The time is linear in the backlog (about 1,200 events/s here either way): 100,000 took
 * 117 s of a CI run, 50,000 took 57 s.
 */
import { readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { call, eventBody, eventually } from '../helpers/api';
import { startTestApp, type TestApp } from '../helpers/harness';
import { type ServerProcess, startServerProcess } from '../helpers/processes';
import { Receiver } from '../helpers/streamReceivers';

const TOTAL = Number(process.env.STREAM_BACKFILL_EVENTS ?? 50_000);
/**
 * The delivering process's V8 heap limit. Keeping what it sent (a document and its JSON item, about
 * 2.5 KB an event) would take 125 MB at 50,000 events; one batch at a time needs a few. Memory is bounded
 * this way, not by comparing RSS over time: RSS rose by 104 MB between the halves of a back-fill that
 * held one batch at a time (V8 grows its heap lazily), and by 2 MB in another run.
 */
const HEAP_CAP_MB = 96;

let app: TestApp;
let server: ServerProcess | undefined;
afterAll(async () => {
  await server?.stop();
  await app.close();
});

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

test(`back-fill of ${TOTAL} events: all of them, in order, with the heap capped below what keeping them takes`, async () => {
  app = await startTestApp({ label: 'stream_backfill', deliverStreams: false });
  const org = await app.org({ plan: 'enterprise' });
  const seedStart = Date.now();
  const next = { i: 0 };
  const writer = async () => {
    while (next.i < TOTAL) {
      const from = next.i;
      next.i += 1000;
      const events = Array.from({ length: Math.min(1000, TOTAL - from) }, (_, j) => eventBody({ actor: { id: `u${from + j}` } }));
      const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events } });
      if (res.status !== 201) throw new Error(`seeding answered ${res.status}: ${res.text}`);
    }
  };
  await Promise.all([writer(), writer()]);
  await eventually('the log signed up to the last event', async () => (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body.tree_size === TOTAL, 120_000);
  const seededMs = Date.now() - seedStart;

  server = await startServerProcess({ MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName, STREAM_ALLOW_PRIVATE_DESTINATIONS: 'true', STREAM_SCAN_INTERVAL_MS: '500', NODE_OPTIONS: `--max-old-space-size=${HEAP_CAP_MB}` });
  const pid = server.child.pid ?? 0;
  let secret = '';
  let highest = 0;
  let outOfOrder = 0;
  const seen = new Uint8Array(TOTAL + 1);
  const receiver = await new Receiver(({ headers, body }) => {
    try {
      new Webhook(secret).verify(body, headers);
    } catch (error) {
      return `signature: ${String(error)}`;
    }
    for (const item of JSON.parse(body) as { receipt: { leaf_index: number } }[]) {
      const seq = item.receipt.leaf_index + 1;
      if (seq > highest + 1) outOfOrder++;
      highest = Math.max(highest, seq);
      seen[seq] = 1;
    }
    return null;
    // Not ready (503, retried) until the creation's answer has given the secret, like webhookReceiver:
    // the first batch may come before the answer does.
  }, () => secret !== '').start();
  receiver.keepBodies = false;
  const baseline = rssMb(pid);
  const created = await call(`${server.url}/v1/streams`, { key: org.key, body: { name: 'backfill', destination: { type: 'webhook', url: receiver.url }, start_seq: 1 } });
  expect(created.status).toBe(201);
  secret = created.body.signing_secret;
  const started = Date.now();
  const samples: { delivered: number; rss: number }[] = [];
  const sampler = setInterval(() => { samples.push({ delivered: highest, rss: rssMb(pid) }); }, 250);
  const child = server.child;
  await eventually('every event delivered', () => {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the delivering process died (${child.exitCode ?? child.signalCode ?? ''}) at sequence number ${highest}: ${server?.output().stderr.slice(-500) ?? ''}`);
    return highest >= TOTAL;
  }, 900_000);
  const seconds = (Date.now() - started) / 1000;
  clearInterval(sampler);
  await receiver.stop();

  const early = Math.max(...samples.filter((s) => s.delivered <= TOTAL / 2).map((s) => s.rss), baseline);
  const late = Math.max(...samples.filter((s) => s.delivered > TOTAL / 2).map((s) => s.rss));
  process.stdout.write(`stream back-fill: ${TOTAL} events in ${seconds.toFixed(1)} s = ${Math.round(TOTAL / seconds)} events/s to the webhook; RSS ${baseline.toFixed(0)} MB before, peak ${early.toFixed(0)} MB in the first half and ${late.toFixed(0)} MB in the second; seeding took ${(seededMs / 1000).toFixed(1)} s\n`);
  expect(outOfOrder).toBe(0);
  expect(seen.subarray(1).every((v) => v === 1)).toBe(true);
  expect(receiver.refused).toHaveLength(0);
}, 1_200_000);
