/**
 * POST /v1/events/batch: all or nothing toward the client (validation, the cap), events in request
 * order at consecutive numbers, and a batch cut short by a crash completed by its retry.
 */
import { call, eventBody, type ApiResponse } from '../helpers/api';
import { expectGapless, fill, twoProcessesOnOneDatabase } from '../helpers/cluster';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { startServerProcess } from '../helpers/processes';
import { claimIdOf } from '../../src/db/idempotencyRepository';
import { eventually } from '../helpers/waiting';

function postBatch(url: string, org: TestOrg, events: unknown[], key?: string): Promise<ApiResponse<any>> {
  return call(`${url}/v1/events/batch`, { key: org.key, body: { events }, headers: key === undefined ? {} : { 'Idempotency-Key': key } });
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
const numbered = (count: number, prefix = 'b') => Array.from({ length: count }, (_, i) => eventBody({ actor: { id: `${prefix}${i}` } }));

async function stored(app: TestApp, org: TestOrg) {
  return (await app.collections.events.find({ tenant: org.id }).toArray()).sort((a, b) => a.seq - b.seq);
}

describe('in one process', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ label: 'batch', limits: { batchEvents: 50 } });
  });
  afterAll(() => app.close());

  test('201 with the events in request order, stored at consecutive numbers, each readable as created', async () => {
    const org = await app.org();
    await fill(app.url, org, 2);
    const res = await postBatch(app.url, org, numbered(20));
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    expect(res.body.events.map((e: { actor_id: string }) => e.actor_id)).toEqual(numbered(20).map((_, i) => `b${i}`));
    const docs = await stored(app, org);
    expect(docs.slice(2).map((d) => [d._id, d.seq])).toEqual(res.body.events.map((e: { id: string }, i: number) => [e.id, i + 3]));
    const read = await call(`${app.url}/v1/events/${res.body.events[7].id}`, { key: org.key });
    expect(read.body).toEqual(res.body.events[7]);
  });

  test('any invalid event: 400 naming each event\'s problems, and nothing stored', async () => {
    const org = await app.org();
    const events = numbered(6);
    events[1] = eventBody({ actor: { name: 'no id' } });
    events[3] = { ...eventBody(), action: undefined };
    const missing = await postBatch(app.url, org, events);
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ message: 'Missing required fields', code: 'MISSING_REQUIRED_FIELDS', fields: ['events[1].actor.id', 'events[3].action'] });
    const invalid = numbered(4);
    invalid[2] = eventBody({ timestamp: 'yesterday', extra: 1 });
    const bad = await postBatch(app.url, org, invalid);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      code: 'VALIDATION_FAILED',
      message: 'Invalid request: events[2].timestamp must be a valid ISO 8601 datetime with a UTC designator or offset, e.g. 2024-01-15T10:30:00.000Z; events[2].extra is not a known field',
      fields: ['events[2].timestamp', 'events[2].extra'],
    });
    const big = numbered(3);
    big[1] = eventBody({ metadata: { blob: 'x'.repeat(70 * 1024) } });
    expect((await postBatch(app.url, org, big)).body).toMatchObject({ code: 'VALIDATION_FAILED', fields: ['events[1].metadata'] });
    for (const body of [{ events: [] }, { events: numbered(51) }, { events: 'many' }, {}, { events: numbered(1), other: 1 }]) {
      const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body });
      expect([res.status, res.body.fields]).toEqual([400, [Object.keys(body).includes('other') ? 'other' : 'events']]);
    }
    expect(await stored(app, org)).toHaveLength(0);
  });

  test('a body over the batch limit is 413; under it, more than the 1 MiB of a single create is fine', async () => {
    const small = await startTestApp({ label: 'batchlimit', limits: { batchBytes: 4096 } });
    try {
      const org = await small.org();
      const res = await postBatch(small.url, org, numbered(40));
      expect(res.status).toBe(413);
      expect(res.body).toEqual({ message: 'Request body exceeds the 4096 bytes limit', code: 'PAYLOAD_TOO_LARGE' });
      expect(await stored(small, org)).toHaveLength(0);
    } finally {
      await small.close();
    }
    const org = await app.org();
    const large = Array.from({ length: 30 }, (_, i) => eventBody({ actor: { id: `l${i}` }, metadata: { blob: 'y'.repeat(60 * 1024) } }));
    const res = await postBatch(app.url, org, large);
    expect(res.status).toBe(201);
    expect(await stored(app, org)).toHaveLength(30);
  });

  test('a cap that cannot take them all: 429 and nothing stored; one that can: all stored', async () => {
    const org = await app.org({ monthlyCap: 10 });
    await fill(app.url, org, 7);
    const refused = await postBatch(app.url, org, numbered(4));
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'MONTHLY_LIMIT_REACHED', message: 'Monthly event limit reached' });
    expect(await stored(app, org)).toHaveLength(7);
    const fresh = await startTestApp({ label: 'batchcap', sharedDbName: app.dbName });
    try {
      expect((await postBatch(fresh.url, org, numbered(3))).status).toBe(201);
    } finally {
      await fresh.close();
    }
    await expectGapless(app, org, 10);
  });

  test('a batch cut short (the server died midway) is completed by its retry, which stores exactly what is missing', async () => {
    // Processes that sign nothing while the test runs: a crash leaves the events after it unsigned (numbers a
    // checkpoint covers are never given again, whatever is stored there).
    const unsigned = { label: 'batchcut', ledgerIntervalMs: 3_600_000 };
    const crashed = await startTestApp(unsigned);
    const org = await crashed.org({ monthlyCap: 20 });
    const events = numbered(20, 'cut');
    const first = await postBatch(crashed.url, org, events, 'cut-short');
    expect(first.status).toBe(201);
    // The state a crash after the first 8 inserts leaves: the claim, events 1 to 8 stored, the rest not.
    const ids: string[] = first.body.events.map((e: { id: string }) => e.id);
    await crashed.collections.events.deleteMany({ tenant: org.id, _id: { $in: ids.slice(8) } });
    // Another process takes over; other events arrive meanwhile, up to 13 of the cap of 20.
    const other = await startTestApp({ ...unsigned, sharedDbName: crashed.dbName });
    try {
      await fill(other.url, org, 5);
      const retry = await postBatch(other.url, org, events, 'cut-short');
      expect(retry.status).toBe(201);
      expect(retry.body.events).toEqual(first.body.events);
      expect(retry.headers.get('idempotent-replayed')).toBeNull(); // this request stored some of them
      // A batch once begun is completed, past the cap; its events keep their order, the missing ones
      // at consecutive numbers after the others' events.
      const docs = await stored(other, org);
      expect(docs.filter((d) => d.idempotency_key === 'cut-short').map((d) => d._id)).toEqual(ids);
      const actors = events.map((_, i) => `cut${i}`);
      expect(docs.map((d) => d.actor_id)).toEqual([...actors.slice(0, 8), ...Array<string>(5).fill('user_123'), ...actors.slice(8)]);
      await expectGapless(other, org, 25);
      // The receipts say where the events are now: the first 8 where they were, the rest after the others'.
      expect(retry.body.ledger.map((r: { leaf_index: number }) => r.leaf_index)).toEqual([...range(0, 8), ...range(13, 25)]);
      const again = await postBatch(other.url, org, events, 'cut-short');
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.text).toBe(retry.text);
      expect(await stored(other, org)).toHaveLength(25);
    } finally {
      await other.close();
      await crashed.close();
    }
  });
});

describe('killed while writing a batch', () => {
  const cluster = twoProcessesOnOneDatabase('batchkill');

  test('the retry at another process completes it: every event once, none missing, in request order', async () => {
    const app = cluster.app();
    const org = await app.org();
    const server = await startServerProcess({ MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName });
    const events = numbered(1000, 'kill');
    const pending = call(`${server.url}/v1/events/batch`, { key: org.key, body: { events }, headers: { 'Idempotency-Key': 'kill-batch' } }).catch((error: unknown) => error);
    // Killed once the claim is taken: before, during or after the insert, wherever it got to.
    const claims = app.collections.idempotencyClaims;
    await eventually('the batch\'s idempotency claim', () => claims.findOne({ _id: claimIdOf(org.id, 'kill-batch') }), 20_000, 2);
    server.child.kill('SIGKILL');
    await pending;
    await server.stop();
    const retry = await call(`${cluster.servers()[1].url}/v1/events/batch`, { key: org.key, body: { events }, headers: { 'Idempotency-Key': 'kill-batch' } });
    expect(retry.status).toBe(201);
    const docs = await stored(app, org);
    expect(docs.map((d) => d.actor_id)).toEqual(events.map((_, i) => `kill${i}`));
    expect(retry.body.events.map((e: { id: string }) => e.id)).toEqual(docs.map((d) => d._id));
    await expectGapless(app, org, 1000);
  });
});
