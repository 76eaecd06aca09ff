/**
 * Idempotency-Key: a retry with the same key and request answers what the first success answered and
 * stores nothing; another request with the key is refused; concurrent retries, in one process or two,
 * and a retry after the server died between storing and answering, all end with one stored event.
 */
import { connect } from 'node:net';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import type { AppRouter } from '../../src/trpc/router';
import { call, eventBody, jsonOrText, type ApiResponse } from '../helpers/api';
import { expectGapless, metric, statuses, twoProcessesOnOneDatabase } from '../helpers/cluster';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { startServerProcess } from '../helpers/processes';
import { claimIdOf } from '../../src/db/idempotencyRepository';
import { eventually } from '../helpers/waiting';

function post(url: string, org: TestOrg, key: string | undefined, body: unknown, path = '/v1/events'): Promise<ApiResponse<any>> {
  return call(`${url}${path}`, { key: org.key, body, headers: key === undefined ? {} : { 'Idempotency-Key': key } });
}

/**
 * A POST written byte by byte on a socket, Idempotency-Key as Latin-1 bytes: fetch and node:http
 * refuse to send some of the keys the service must refuse itself.
 */
async function rawPost(url: string, org: TestOrg, key: string, body: unknown): Promise<{ status: number; body: any }> {
  const { hostname, port } = new URL(url);
  const payload = Buffer.from(JSON.stringify(body));
  const socket = connect(Number(port), hostname);
  socket.write(Buffer.concat([
    Buffer.from(`POST /v1/events HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${org.key}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${payload.length}\r\nConnection: close\r\nIdempotency-Key: ${key}\r\n\r\n`, 'latin1'),
    payload,
  ]));
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return { status: Number(text.slice(9, 12)), body: jsonOrText(text.slice(text.indexOf('\r\n\r\n') + 4)) };
}

async function storedCount(app: TestApp, org: TestOrg): Promise<number> {
  return app.collections.events.countDocuments({ tenant: org.id });
}

describe('in one process', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ label: 'idem' });
  });
  afterAll(() => app.close());

  test('a replay answers the first response exactly, with Idempotent-Replayed, and stores and counts nothing', async () => {
    const org = await app.org({ monthlyCap: 2 });
    const first = await post(app.url, org, 'order-1001', eventBody({ actor: { id: 'replayer' } }));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    for (let i = 0; i < 3; i++) {
      const again = await post(app.url, org, 'order-1001', eventBody({ actor: { id: 'replayer' } }));
      expect(again.status).toBe(201);
      expect(again.text).toBe(first.text);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    }
    expect(await storedCount(app, org)).toBe(1);
    // One unit of the cap of 2 is used: one more event fits, the next does not.
    expect((await post(app.url, org, undefined, eventBody())).status).toBe(201);
    expect((await post(app.url, org, undefined, eventBody())).status).toBe(429);
    // A replay still answers at the cap: it stores nothing.
    expect((await post(app.url, org, 'order-1001', eventBody({ actor: { id: 'replayer' } }))).text).toBe(first.text);
  });

  test('"the same request" is the validated body: layout, key order, null for absent and the offset do not matter', async () => {
    const org = await app.org();
    const first = await post(app.url, org, 'k', {
      action: 'invoice.paid', actor: { id: 'a1', name: null }, resource: { type: 'invoice', id: 'inv_1' }, timestamp: '2024-01-15T10:30:00.000Z', metadata: { x: 1 },
    });
    expect(first.status).toBe(201);
    const rawBody = `{ "resource": {"id": "inv_1", "type": "invoice"},\n "metadata": {"x": 1}, "actor": {"id": "a1"}, "timestamp": "2024-01-15T11:30:00+01:00", "action": "invoice.paid" }`;
    const again = await call(`${app.url}/v1/events`, { key: org.key, rawBody, headers: { 'Idempotency-Key': 'k' } });
    expect(again.status).toBe(201);
    expect(again.body.event).toEqual(first.body.event);
    expect(await storedCount(app, org)).toBe(1);
  });

  test('the same key with another request is 422 IDEMPOTENCY_KEY_REUSED and stores nothing', async () => {
    const org = await app.org();
    expect((await post(app.url, org, 'reused', eventBody({ action: 'a.one' }))).status).toBe(201);
    const other = await post(app.url, org, 'reused', eventBody({ action: 'a.two' }));
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', message: 'This Idempotency-Key was already used for a different request' });
    // Metadata is stored exactly, key order included, so another order is another request.
    const m1 = await post(app.url, org, 'meta', eventBody({ metadata: { a: 1, b: 2 } }));
    const m2 = await post(app.url, org, 'meta', eventBody({ metadata: { b: 2, a: 1 } }));
    expect([m1.status, m2.status]).toEqual([201, 422]);
    // The key is for one kind of request: a batch with a single event is another request.
    const batch = await post(app.url, org, 'reused', { events: [eventBody({ action: 'a.one' })] }, '/v1/events/batch');
    expect(batch.status).toBe(422);
    expect(await storedCount(app, org)).toBe(2);
  });

  test('keys are scoped to the organization', async () => {
    const [a, b] = [await app.org(), await app.org()];
    const fromA = await post(app.url, a, 'shared-key', eventBody());
    const fromB = await post(app.url, b, 'shared-key', eventBody());
    expect([fromA.status, fromB.status]).toEqual([201, 201]);
    expect(fromB.body.event.id).not.toBe(fromA.body.event.id);
    expect(fromB.headers.get('idempotent-replayed')).toBeNull();
  });

  test('a key must be 1 to 255 printable ASCII characters (400, nothing stored)', async () => {
    const org = await app.org();
    for (const bad of ['', 'x'.repeat(256), 'caf\u00e9', 'tab\there']) {
      const res = await rawPost(app.url, org, bad, eventBody());
      expect([bad, res.status, res.body.code, res.body.fields]).toEqual([bad, 400, 'VALIDATION_FAILED', ['Idempotency-Key']]);
    }
    // A control character never gets past Node's HTTP parser, which answers a bare 400 itself.
    expect((await rawPost(app.url, org, 'del\u007f', eventBody())).status).toBe(400);
    expect((await post(app.url, org, 'order #42 / retry:{1}~', eventBody())).status).toBe(201);
    expect((await post(app.url, org, 'x'.repeat(255), eventBody())).status).toBe(201);
    expect(await storedCount(app, org)).toBe(2);
  });

  test('ten concurrent requests with one key store one event and all answer it', async () => {
    const org = await app.org();
    const results = await Promise.all(Array.from({ length: 10 }, () => post(app.url, org, 'burst', eventBody({ actor: { id: 'burst' } }))));
    expect(statuses(results)).toEqual({ 201: 10 });
    expect(new Set(results.map((r) => JSON.stringify(r.body))).size).toBe(1);
    expect(await storedCount(app, org)).toBe(1);
    await expectGapless(app, org, 1);
  });

  test('a request refused for the cap is not remembered: its retry, with any body, is judged afresh', async () => {
    const org = await app.org({ monthlyCap: 1 });
    expect((await post(app.url, org, undefined, eventBody())).status).toBe(201);
    const refused = await post(app.url, org, 'after-cap', eventBody({ action: 'first.try' }));
    expect(refused.status).toBe(429);
    // Not "reused": nothing was remembered for the key.
    expect((await post(app.url, org, 'after-cap', eventBody({ action: 'other.try' }))).status).toBe(429);
    expect(await app.collections.idempotencyClaims.findOne({ _id: claimIdOf(org.id, 'after-cap') })).toBeNull();
    // With room again (an operator raised the cap), the retry is stored.
    await app.collections.orgs.updateOne({ _id: org.id }, { $set: { monthly_cap: 5 } });
    const fresh = await startTestApp({ label: 'idemcap', sharedDbName: app.dbName });
    try {
      const stored = await post(fresh.url, org, 'after-cap', eventBody({ action: 'other.try' }));
      expect(stored.status).toBe(201);
      expect(stored.body.event.action).toBe('other.try');
    } finally {
      await fresh.close();
    }
  });

  test('the event records its key; an expired key is forgotten and may be used again', async () => {
    const org = await app.org();
    const first = await post(app.url, org, 'expiring', eventBody());
    const stored = await app.collections.events.findOne({ tenant: org.id, _id: first.body.event.id });
    expect(stored?.idempotency_key).toBe('expiring');
    await app.collections.idempotencyClaims.updateOne({ _id: claimIdOf(org.id, 'expiring') }, { $set: { expires_at: new Date(Date.now() - 1000) } });
    const later = await post(app.url, org, 'expiring', eventBody({ action: 'something.else' }));
    expect(later.status).toBe(201);
    expect(later.body.event.id).not.toBe(first.body.event.id);
  });

  test('over tRPC the key is an input field, and a replay answers the same event', async () => {
    const org = await app.org();
    const trpc = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${app.url}/trpc`, headers: () => ({ authorization: `Bearer ${org.key}` }) })] });
    const input = { actor: { id: 'ts' }, action: 'a.b', resource: { type: 't', id: 'i' }, idempotency_key: 'trpc-1' };
    const [one, two] = [await trpc.events.create.mutate(input), await trpc.events.create.mutate(input)];
    expect(two).toEqual(one);
    const batch = { events: [{ actor: { id: 'ts' }, action: 'a.c', resource: { type: 't', id: 'i' } }], idempotency_key: 'trpc-2' };
    expect(await trpc.events.createBatch.mutate(batch)).toEqual(await trpc.events.createBatch.mutate(batch));
    expect(await storedCount(app, org)).toBe(2);
    // The header and the field must agree when both are given.
    const both = await call(`${app.url}/v1/events`, { key: org.key, body: { ...eventBody(), idempotency_key: 'a' }, headers: { 'Idempotency-Key': 'b' } });
    expect(both.status).toBe(400);
  });
});

describe('across server processes', () => {
  const cluster = twoProcessesOnOneDatabase('idemtwo');

  test('twenty requests with one key, split over two processes at once, store one event', async () => {
    const app = cluster.app();
    const org = await app.org();
    const [one, two] = cluster.servers();
    const claimed = async () => (await metric(one.metricsUrl, 'idempotency_keys_claimed_total')) + (await metric(two.metricsUrl, 'idempotency_keys_claimed_total'));
    const claimedBefore = await claimed();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => post((i % 2 ? one : two).url, org, 'split', eventBody({ actor: { id: 'split' } }))));
    expect(statuses(results)).toEqual({ 201: 20 });
    expect(new Set(results.map((r) => r.body.event.id)).size).toBe(1);
    expect(await storedCount(app, org)).toBe(1);
    const batch = { events: Array.from({ length: 50 }, (_, i) => eventBody({ actor: { id: `b${i}` } })) };
    const batches = await Promise.all(Array.from({ length: 6 }, (_, i) => post((i % 2 ? one : two).url, org, 'split-batch', batch, '/v1/events/batch')));
    expect(statuses(batches)).toEqual({ 201: 6 });
    expect(new Set(batches.map((r) => r.text)).size).toBe(1);
    await expectGapless(app, org, 51);
    // Each key was claimed once, by one request in one of the processes; every other request joined it.
    expect((await claimed()) - claimedBefore).toBe(2);
  });

  test('killed after storing and before answering: the retry, at a new process, finds the stored event', async () => {
    const app = cluster.app();
    const org = await app.org();
    const server = await startServerProcess({ MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName });
    const body = eventBody({ actor: { id: 'crash' } });
    // The request is sent and the client stops listening once the event is stored; then the server dies.
    const aborted = new AbortController();
    const pending = fetch(`${server.url}/v1/events`, {
      method: 'POST',
      signal: aborted.signal,
      headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json', 'Idempotency-Key': 'crash-1' },
      body: JSON.stringify(body),
    }).catch((error: unknown) => error);
    await eventually('the event stored', async () => (await storedCount(app, org)) > 0, 20_000, 5);
    aborted.abort();
    server.child.kill('SIGKILL');
    await pending;
    await server.stop();
    const [stored] = await app.collections.events.find({ tenant: org.id }).toArray();
    const retry = await post(cluster.servers()[0].url, org, 'crash-1', body);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.event.id).toBe(stored?._id);
    expect(await storedCount(app, org)).toBe(1);
  });
});
