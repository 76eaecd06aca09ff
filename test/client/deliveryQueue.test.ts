/**
 * The client package's delivery queue (packages/client) against the real service: nothing lost, nothing
 * doubled, through a restart of the service and answers lost after the service stored a batch; a
 * refusal rejects only what it names; a full queue makes `record()` wait, then refuses, never drops;
 * `Retry-After` is honoured; the monthly cap is not retried. Between the queue and the service runs a
 * loopback HTTP proxy that can be pointed at another service (a restart) or lose answers (the service
 * stored the batch, the client never hears it): the faults a network puts in, not a stand-in service.
 */
import { type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import { AuditLedgerClient, AuditLedgerError, DeliveryQueue, type EventInput, QueueFullError, type Recorded, type StoredEvent } from '../../packages/client/src';
import { listenOnFreePort, startTestApp, type TestApp, uniqueDbName } from '../helpers/harness';

/**
 * A loopback HTTP proxy to `target`. `loseAnswers`: that many requests are answered by closing the
 * connection once the service answered; `cutAnswers`: that many by the status and headers and a few bytes
 * of the body, then closing.
 */
class FaultyProxy {
  target: string | null = null;
  loseAnswers = 0;
  answersLost = 0;
  cutAnswers = 0;
  answersCut = 0;
  forwarded = 0;
  private server: Server | null = null;
  url = '';

  /** Each request, forwarded to `target` or cut as told. */
  private readonly forward = (req: IncomingMessage, res: ServerResponse): void => {
    const target = this.target;
    if (!target) {
      res.socket?.destroy();
      return;
    }
    const upstream = request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (answer) => {
      this.forwarded++;
      if (this.loseAnswers > 0) {
        this.loseAnswers--;
        this.answersLost++;
        answer.resume();
        answer.on('end', () => res.socket?.destroy());
        return;
      }
      if (this.cutAnswers > 0 && answer.statusCode === 201) {
        this.cutAnswers--;
        this.answersCut++;
        answer.once('data', (chunk: Buffer) => {
          res.writeHead(201, { 'content-type': 'application/json', 'content-length': String(Number(answer.headers['content-length'] ?? 100_000)) });
          res.write(chunk.subarray(0, 20), () => res.socket?.destroy());
          answer.resume();
        });
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.socket?.destroy());
    req.pipe(upstream);
  };

  async start(): Promise<void> {
    ({ server: this.server, url: this.url } = await listenOnFreePort(this.forward));
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => { resolve(); }));
  }
}

const event = (i: number, overrides: Partial<EventInput> = {}): EventInput => ({
  actor: { id: `user_${i % 7}` },
  action: 'client.recorded',
  resource: { type: 'document', id: `doc_${i}` },
  metadata: { i },
  ...overrides,
});

const apps: TestApp[] = [];
const proxies: FaultyProxy[] = [];
afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
  for (const app of apps.reverse()) await app.close();
});

async function proxyTo(app: TestApp | null): Promise<FaultyProxy> {
  const proxy = new FaultyProxy();
  await proxy.start();
  proxy.target = app?.url ?? null;
  proxies.push(proxy);
  return proxy;
}

test('2,000 events through the queue, across a restart of the service and lost answers: each stored once, each with its receipt', async () => {
  const dbName = uniqueDbName('client_queue');
  let app = await startTestApp({ label: 'client_queue', sharedDbName: dbName });
  apps.push(app);
  const org = await app.org();
  const proxy = await proxyTo(app);
  const retries: string[] = [];
  const queue = new DeliveryQueue(new AuditLedgerClient({ url: proxy.url, apiKey: org.key }), {
    maxBatch: 50,
    flushIntervalMs: 20,
    backoff: { initialMs: 20, maxMs: 200 },
    onRetry: (error) => retries.push(error.name),
  });
  const recorded: Promise<Recorded>[] = [];
  for (let i = 0; i < 1000; i++) recorded.push(queue.record(event(i)));
  // The service stores the next two batches but the client hears nothing: it must retry them with their keys.
  proxy.loseAnswers = 2;
  await Promise.all(recorded.slice(0, 500));
  // A restart: the service goes away with batches queued, and a new process on the same database comes back.
  proxy.target = null;
  apps.pop();
  await app.close();
  for (let i = 1000; i < 2000; i++) recorded.push(queue.record(event(i)));
  app = await startTestApp({ label: 'client_queue', sharedDbName: dbName });
  apps.push(app);
  proxy.target = app.url;
  const results = await Promise.all(recorded);
  await queue.close();

  expect(proxy.answersLost).toBe(2);
  expect(retries.length).toBeGreaterThanOrEqual(2); // the lost answers at least, and the restart's refused connections
  const stored = await app.collections.events.find({ tenant: org.id, action: 'client.recorded' }).toArray();
  expect(stored.length).toBe(2000);
  const bySeq = new Map(stored.map((doc) => [doc.seq, doc]));
  // Each recorded event resolved with its own stored event and receipt, in the order recorded.
  results.forEach((result, i) => {
    expect('removed' in result.event).toBe(false);
    const doc = bySeq.get(result.receipt.seq);
    expect(doc?._id).toBe(result.event.id);
    expect(JSON.parse(String(doc?.metadata))).toEqual({ i });
    if (i > 0) expect(result.receipt.seq).toBeGreaterThan((results[i - 1] as Recorded).receipt.seq);
  });
  expect(new Set(results.map((r) => r.event.id)).size).toBe(2000);
  await app.client.db(dbName).dropDatabase();
});

test('an answer cut after its status, an event changed after record() and one JSON cannot hold: nothing doubled, nothing refused that was stored, nothing blocked', async () => {
  const app = await startTestApp({ label: 'client_cut' });
  apps.push(app);
  const org = await app.org();
  const proxy = await proxyTo(app);
  const queue = new DeliveryQueue(new AuditLedgerClient({ url: proxy.url, apiKey: org.key }), { flushIntervalMs: 10, backoff: { initialMs: 10, maxMs: 50 } });
  // The service stores the batch; the client gets its 201 and the start of its body, then the connection closes.
  proxy.cutAnswers = 1;
  const mutable = event(0);
  const first = [queue.record(mutable), queue.record(event(1))];
  (mutable.metadata as Record<string, unknown>).i = 'changed after record()'; // a retry must still send the first body
  const poison = queue.record(event(2, { metadata: { big: 10n } as unknown as Record<string, unknown> }));
  await expect(poison).rejects.toThrow(TypeError); // refused alone, at once
  const later = queue.record(event(3));
  const results = await Promise.all([...first, later]);
  await queue.close();
  expect(proxy.answersCut).toBe(1);
  expect(results.map((r) => (r.event as StoredEvent).metadata.i)).toEqual([0, 1, 3]);
  expect(await app.collections.events.countDocuments({ tenant: org.id, action: 'client.recorded' })).toBe(3);
});

test('a refused batch rejects only the events its 400 names; the others are stored', async () => {
  const app = await startTestApp({ label: 'client_refusal' });
  apps.push(app);
  const org = await app.org();
  const queue = new DeliveryQueue(new AuditLedgerClient({ url: app.url, apiKey: org.key }), { flushIntervalMs: 10 });
  const bad = { ...event(2), actor: {} } as unknown as EventInput;
  const outcomes = await Promise.allSettled([queue.record(event(0)), queue.record(event(1)), queue.record(bad), queue.record(event(3))]);
  await queue.close();
  expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  const reason = (outcomes[2] as PromiseRejectedResult).reason as AuditLedgerError;
  expect(reason).toBeInstanceOf(AuditLedgerError);
  expect([reason.status, reason.code, reason.message]).toEqual([400, 'MISSING_REQUIRED_FIELDS', 'Missing required fields']);
  expect(reason.fields).toContain('events[2].actor.id');
  expect(await app.collections.events.countDocuments({ tenant: org.id, action: 'client.recorded' })).toBe(3);
});

test('a batch too large for the service (413) is halved until each part fits: all stored once, in order; an event too large alone is refused alone', async () => {
  const app = await startTestApp({ label: 'client_413', limits: { batchBytes: 4000 } });
  apps.push(app);
  const org = await app.org();
  const sent: number[] = [];
  const counting: typeof fetch = async (input, init) => {
    if (typeof init?.body === 'string') sent.push(init.body.length);
    return fetch(input, init);
  };
  const queue = new DeliveryQueue(new AuditLedgerClient({ url: app.url, apiKey: org.key, fetch: counting }), { maxBatch: 24, flushIntervalMs: 10 });
  const padded = (i: number) => event(i, { metadata: { i, pad: 'x'.repeat(300) } });
  const outcomes = await Promise.allSettled([...Array.from({ length: 12 }, (_, i) => queue.record(padded(i))), queue.record(event(12, { metadata: { i: 12, pad: 'x'.repeat(5000) } })), ...Array.from({ length: 11 }, (_, i) => queue.record(padded(13 + i)))]);
  await queue.close();
  expect(outcomes.map((o) => o.status)).toEqual(Array.from({ length: 24 }, (_, i) => (i === 12 ? 'rejected' : 'fulfilled')));
  expect(((outcomes[12] as PromiseRejectedResult).reason as AuditLedgerError).status).toBe(413);
  const stored = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [(o.value.event as StoredEvent).metadata.i] : []));
  expect(stored).toEqual([...Array.from({ length: 12 }, (_, i) => i), ...Array.from({ length: 11 }, (_, i) => 13 + i)]);
  expect(sent.filter((bytes) => bytes > 4000).length).toBeGreaterThan(1); // it did meet 413s and split
  expect(await app.collections.events.countDocuments({ tenant: org.id, action: 'client.recorded' })).toBe(23);
});

test('a full queue makes record() wait, then refuses at once; nothing is dropped and all is stored once the service is back', async () => {
  const app = await startTestApp({ label: 'client_full' });
  apps.push(app);
  const org = await app.org();
  const proxy = await proxyTo(null); // the service cannot be reached
  const queue = new DeliveryQueue(new AuditLedgerClient({ url: proxy.url, apiKey: org.key }), { maxBatch: 10, capacity: 10, flushIntervalMs: 10, backoff: { initialMs: 10, maxMs: 50 } });
  const accepted = Array.from({ length: 20 }, (_, i) => queue.record(event(i)));
  expect(queue.size).toBe(10); // ten held, ten waiting for room
  await expect(queue.record(event(20))).rejects.toBeInstanceOf(QueueFullError);
  proxy.target = app.url;
  const results = await Promise.all(accepted);
  await queue.close();
  expect(results.map((r) => (r.event as StoredEvent).metadata.i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  expect(await app.collections.events.countDocuments({ tenant: org.id, action: 'client.recorded' })).toBe(20);
});

test('a 429 is retried no sooner than its Retry-After; the monthly cap is not retried', async () => {
  const app = await startTestApp({ label: 'client_limits', env: { RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '1' } });
  apps.push(app);
  const org = await app.org();
  const delays: { code: string; retryAfterMs: number | null; delayMs: number }[] = [];
  const client = new AuditLedgerClient({ url: app.url, apiKey: org.key });
  // Three requests at once against a burst of one: two are over the limit however slow the machine.
  const queue = new DeliveryQueue(client, { maxBatch: 1, concurrency: 3, flushIntervalMs: 1, backoff: { initialMs: 1, maxMs: 5 }, onRetry: (error, _attempt, delayMs) => {
    if (error instanceof AuditLedgerError) delays.push({ code: error.code, retryAfterMs: error.retryAfterMs, delayMs });
  } });
  const results = await Promise.all([0, 1, 2].map((i) => queue.record(event(i))));
  await queue.close();
  expect(results).toHaveLength(3);
  expect(delays.length).toBeGreaterThanOrEqual(2);
  for (const d of delays) {
    expect(d.code).toBe('RATE_LIMITED');
    expect(d.retryAfterMs).toBeGreaterThanOrEqual(1000);
    expect(d.delayMs).toBeGreaterThanOrEqual(d.retryAfterMs ?? Infinity);
  }

  const capped = await app.org({ monthlyCap: 1 });
  const retried: string[] = [];
  const cappedQueue = new DeliveryQueue(new AuditLedgerClient({ url: app.url, apiKey: capped.key }), { maxBatch: 5, flushIntervalMs: 1, onRetry: (error) => retried.push(error.message) });
  const outcomes = await Promise.allSettled([cappedQueue.record(event(0)), cappedQueue.record(event(1))]);
  await cappedQueue.close();
  for (const outcome of outcomes) {
    expect(outcome.status).toBe('rejected');
    expect(((outcome as PromiseRejectedResult).reason as AuditLedgerError).code).toBe('MONTHLY_LIMIT_REACHED');
  }
  expect(retried).toEqual([]);
});

test('many queues share one beforeExit listener (none past Node\'s limit of ten), removed when the last closes; the exit flush sends what each holds', async () => {
  const app = await startTestApp({ label: 'client_queue_exit' });
  apps.push(app);
  const org = await app.org();
  const before = process.listenerCount('beforeExit');
  const queues = Array.from({ length: 20 }, () => new DeliveryQueue(new AuditLedgerClient({ url: app.url, apiKey: org.key }), { flushIntervalMs: 60_000 }));
  expect(process.listenerCount('beforeExit')).toBe(before + 1);
  const recorded = queues.map((queue, i) => queue.record(event(i)));
  // What Node does when the process runs out of work: every queue's events are sent.
  process.emit('beforeExit', 0);
  expect((await Promise.all(recorded)).length).toBe(20);
  expect(await app.collections.events.countDocuments({ tenant: org.id })).toBe(20);
  for (const queue of queues.slice(1)) await queue.close();
  expect(process.listenerCount('beforeExit')).toBe(before + 1);
  await queues[0]?.close();
  expect(process.listenerCount('beforeExit')).toBe(before);
});
