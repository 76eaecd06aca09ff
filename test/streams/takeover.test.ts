/**
 * Streams delivered by server processes, as installed: a SIGKILL in the middle of a batch loses nothing
 * (the next process resumes from the last acknowledged event), and with two instances the stream runs
 * on one of them; when that one is SIGKILLed the other takes it over within seconds and continues from
 * the last acknowledged event. The receiver may see a batch twice (at least once), never a gap.
 */
import { call, eventBody, eventually } from '../helpers/api';
import { metric } from '../helpers/cluster';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { type ServerProcess, startServerProcess } from '../helpers/processes';
import { type Receiver, webhookItems, webhookReceiver } from '../helpers/streamReceivers';

let app: TestApp;
const servers: ServerProcess[] = [];
beforeAll(async () => {
  // The test app writes events here and delivers nothing: the processes do.
  app = await startTestApp({ label: 'stream_takeover', deliverStreams: false });
});
afterAll(async () => {
  for (const server of servers) await server.stop();
  await app.close();
});

const env = () => ({ MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName, STREAM_ALLOW_PRIVATE_DESTINATIONS: 'true', STREAM_SCAN_INTERVAL_MS: '500', STREAM_POLL_MS: '100', STREAM_MAX_BACKOFF_MS: '500' });

async function start(): Promise<ServerProcess> {
  const server = await startServerProcess(env());
  servers.push(server);
  return server;
}

async function fill(org: TestOrg, count: number): Promise<void> {
  for (let done = 0; done < count; done += 100) {
    const events = Array.from({ length: Math.min(100, count - done) }, () => eventBody());
    expect((await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events } })).status).toBe(201);
  }
}

async function stream(server: ServerProcess, org: TestOrg): Promise<Receiver & { streamId?: string }> {
  let secret = '';
  const receiver = await webhookReceiver(() => secret).start();
  const res = await call(`${server.url}/v1/streams`, { key: org.key, body: { name: 'hook', destination: { type: 'webhook', url: receiver.url }, start_seq: 1 } });
  expect(res.status).toBe(201);
  secret = res.body.signing_secret;
  return Object.assign(receiver, { streamId: res.body.id as string });
}

/** Every event 1..n arrived, and no batch ever started past what had arrived before it. */
function expectCompleteInOrder(receiver: Receiver, n: number): number {
  const seqs = webhookItems(receiver).map((item: { receipt: { leaf_index: number } }) => item.receipt.leaf_index + 1);
  let highest = 0;
  for (const seq of seqs) {
    expect(seq).toBeLessThanOrEqual(highest + 1);
    highest = Math.max(highest, seq);
  }
  expect([...new Set(seqs)].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  return seqs.length - n;
}

test('SIGKILL in the middle of a batch: the next process resumes from the last acknowledged event', async () => {
  const org = await app.org();
  const first = await start();
  const receiver = await stream(first, org);
  await fill(org, 300);
  await eventually('some delivered', () => Promise.resolve(webhookItems(receiver).length > 0));
  // The next batch hangs at the receiver; the process dies while it waits for the answer.
  receiver.mode = { kind: 'slow', ms: 3000 };
  await fill(org, 700);
  await eventually('a batch held at the receiver', () => Promise.resolve(receiver.held > 0), 20_000, 20);
  first.child.kill('SIGKILL');
  await new Promise((resolve) => first.child.once('exit', resolve));
  receiver.mode = { kind: 'ok' };
  await start();
  // The stream's creation record (audit_ledger.stream.created, 1) and the 1000 events.
  await eventually('all 1001 delivered after the restart', () => Promise.resolve(new Set(webhookItems(receiver).map((i: { event: { id: string } }) => i.event.id)).size >= 1001), 60_000);
  const repeats = expectCompleteInOrder(receiver, 1001);
  expect(repeats).toBeLessThanOrEqual(500);
  expect((await call(`${servers[1]?.url}/v1/streams/${receiver.streamId}`, { key: org.key, method: 'DELETE' })).status).toBe(200);
  await receiver.stop();
});

test('two instances: the stream runs on one; SIGKILL it and the other continues within seconds', async () => {
  for (const server of servers.splice(0)) await server.stop();
  const org = await app.org();
  const a = await start();
  const b = await start();
  for (const server of [a, b]) await eventually('both instances live', async () => (await metric(server.metricsUrl, 'instances_live')) === 2);
  const receiver = await stream(a, org);
  receiver.mode = { kind: 'slow', ms: 50 };
  await fill(org, 500);
  await eventually('deliveries started', () => Promise.resolve(webhookItems(receiver).length > 0));
  const running = await Promise.all([a, b].map((s) => metric(s.metricsUrl, 'streams_running')));
  expect([...running].sort()).toEqual([0, 1]);
  const [deliverer, other] = running[0] === 1 ? [a, b] : [b, a];
  deliverer.child.kill('SIGKILL');
  const killedAt = Date.now();
  await fill(org, 500);
  await eventually('the other instance delivering', async () => (await metric(other.metricsUrl, 'stream_events_delivered_total')) > 0, 30_000);
  const tookOverMs = Date.now() - killedAt;
  // The stream's creation record and the 1000 events.
  await eventually('all 1001 delivered', () => Promise.resolve(new Set(webhookItems(receiver).map((i: { event: { id: string } }) => i.event.id)).size >= 1001), 60_000);
  expectCompleteInOrder(receiver, 1001);
  expect(await metric(other.metricsUrl, 'streams_running')).toBe(1);
  expect(await metric(other.metricsUrl, 'stream_events_delivered_total')).toBeGreaterThan(0);
  // Seen gone after 5 s of silence, then one scan: "within seconds".
  expect(tookOverMs).toBeLessThan(20_000);
  process.stdout.write(`stream take-over after SIGKILL: ${tookOverMs} ms\n`);
  await receiver.stop();
});
