/**
 * Log streams to an HTTPS webhook (here plain http on loopback: STREAM_ALLOW_PRIVATE_DESTINATIONS),
 * signed per Standard Webhooks and checked by an independent library: everything arrives in sequence
 * order with receipts that match the events; a receiver that is down or refusing for a while gets
 * everything once it is back; a paused stream keeps its place; one organization's failing stream
 * never holds up another's.
 */
import { call, eventBody, eventually } from '../helpers/api';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { type Receiver, webhookItems, webhookReceiver } from '../helpers/streamReceivers';
import { eventSha256 } from '../../src/domain/ledger/eventHash';
import { hashInputOfEvent } from '../../src/domain/eventFields';
import { quietFor } from '../helpers/waiting';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ label: 'streams', env: { STREAM_MAX_BACKOFF_MS: '400', STREAM_FAILING_AFTER_MS: '1500' } });
});
afterAll(() => app.close());

async function fill(org: TestOrg, count: number, prefix = 'e'): Promise<void> {
  for (let done = 0; done < count; done += 100) {
    const events = Array.from({ length: Math.min(100, count - done) }, (_, i) => eventBody({ actor: { id: `${prefix}${done + i}` } }));
    const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events } });
    if (res.status !== 201) throw new Error(`batch answered ${res.status}: ${res.text}`);
  }
}

async function webhookStream(org: TestOrg, body: Record<string, unknown> = {}): Promise<{ id: string; receiver: Receiver }> {
  let secret = '';
  const receiver = await webhookReceiver(() => secret).start();
  const res = await call(`${app.url}/v1/streams`, { key: org.key, body: { name: 'siem', destination: { type: 'webhook', url: `${receiver.url}/hook` }, start_seq: 1, ...body } });
  expect(res.status).toBe(201);
  expect(res.body.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
  secret = res.body.signing_secret;
  return { id: res.body.id, receiver };
}

const seqsOf = (items: { receipt: { leaf_index: number } }[]) => items.map((item) => item.receipt.leaf_index + 1);
const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
/** The items of events the test sent, without the organization's own records (its stream's creation, pause, resume). */
const sentItems = (receiver: Receiver) => webhookItems(receiver).filter((item: { event: { action: string } }) => !item.event.action.startsWith('audit_ledger.'));

test('every event, in sequence order, each as GET returns it with a receipt that hashes to it; signatures verify', async () => {
  const org = await app.org();
  await fill(org, 250);
  const { id, receiver } = await webhookStream(org);
  await fill(org, 150, 'late');
  // 400 events, and the stream's own creation record (audit_ledger.stream.created) between them at 251.
  await eventually('401 events delivered', () => Promise.resolve(webhookItems(receiver).length >= 401), 30_000);
  const items = webhookItems(receiver);
  expect(seqsOf(items)).toEqual(upTo(401));
  expect(items[250]?.event.action).toBe('audit_ledger.stream.created');
  expect(receiver.refused).toEqual([]);
  const sample = items[123];
  const read = await call(`${app.url}/v1/events/${sample.event.id}`, { key: org.key });
  expect(sample.event).toEqual(read.body);
  for (const item of items) expect(item.receipt.event_sha256).toBe(eventSha256(hashInputOfEvent(item.event)));
  // Each batch names its range, and carries a checkpoint that covers it.
  for (const batch of receiver.accepted) {
    const [first, last] = (batch.headers['audit-ledger-sequence'] ?? '').split('-').map(Number) as [number, number];
    const note = Buffer.from(batch.headers['audit-ledger-checkpoint'] ?? '', 'base64').toString('utf8');
    const size = Number(note.split('\n')[1]);
    expect(size).toBeGreaterThanOrEqual(last);
    expect(seqsOf(JSON.parse(batch.body) as { receipt: { leaf_index: number } }[])).toEqual(Array.from({ length: last - first + 1 }, (_, i) => first + i));
  }
  const view = await eventually('the stream caught up', async () => {
    const res = await call(`${app.url}/v1/streams/${id}`, { key: org.key });
    return res.body.delivered_seq === 401 && res.body;
  });
  expect(view).toMatchObject({ state: 'active', lag_events: 0, lag_seconds: null, failing_since: null, format: 'json', destination: { type: 'webhook' } });
  expect(view.history.reduce((n: number, h: { delivered: number }) => n + h.delivered, 0)).toBe(401);
  await receiver.stop();
});

test('a receiver down, then refusing with Retry-After, then back: everything arrives once acknowledged, in order, nothing skipped', async () => {
  const org = await app.org();
  const { id, receiver } = await webhookStream(org);
  await fill(org, 50);
  // The stream's creation record is 1, the events 2…51.
  await eventually('the first events', () => Promise.resolve(webhookItems(receiver).length >= 51));
  await receiver.stop();
  await fill(org, 120, 'down');
  const failing = await eventually('the stream marked failing', async () => {
    const res = await call(`${app.url}/v1/streams/${id}`, { key: org.key });
    return res.body.state === 'failing' && res.body;
  }, 20_000);
  expect(failing.last_error).toMatch(/ECONNREFUSED/);
  expect(failing.lag_events).toBe(120);
  await receiver.start();
  receiver.mode = { kind: 'status', status: 503, retryAfter: '1' };
  await eventually('a refused attempt', () => Promise.resolve(receiver.refused.length > 0));
  receiver.mode = { kind: 'ok' };
  await eventually('everything delivered', () => Promise.resolve(webhookItems(receiver).length >= 171), 30_000);
  const seqs = seqsOf(webhookItems(receiver));
  // At least once: a batch may arrive twice, but in order and with nothing missing.
  expect([...new Set(seqs)]).toEqual(upTo(171));
  // Never ahead of what was delivered before: a repeat starts at or before the next, never after it.
  let highest = 0;
  for (const seq of seqs) {
    expect(seq).toBeLessThanOrEqual(highest + 1);
    highest = Math.max(highest, seq);
  }
  const view = await eventually('active again', async () => {
    const res = await call(`${app.url}/v1/streams/${id}`, { key: org.key });
    return res.body.state === 'active' && res.body.delivered_seq === 171 && res.body;
  });
  expect(view.failing_since).toBeNull();
  expect(view.history.some((h: { failed: number }) => h.failed > 0)).toBe(true);
  await receiver.stop();
});

test('paused keeps its place and catches up on resume; a failing stream of one organization holds up no other', async () => {
  const stuck = await app.org();
  const hang = await webhookStream(stuck);
  hang.receiver.mode = { kind: 'status', status: 500 };
  await fill(stuck, 30);
  const org = await app.org();
  const { id, receiver } = await webhookStream(org);
  await fill(org, 40);
  // The creation record (1) and the 40 events.
  await eventually('delivered beside a failing stream', () => Promise.resolve(webhookItems(receiver).length >= 41));
  expect((await call(`${app.url}/v1/streams/${id}/pause`, { key: org.key, body: {} })).body.state).toBe('paused');
  // Two scans, the second begun after the pause was stored, so the deliverer has seen it and stopped the stream's run.
  await app.services.streamDelivery.scan();
  await app.services.streamDelivery.scan();
  await fill(org, 60, 'paused');
  await quietFor(1000, 'five scan intervals (200 ms here) in which the paused stream must send none of the 60');
  // None of the 60 sent while paused; the pause's own record (42) may have gone before the pause was seen.
  expect(sentItems(receiver)).toHaveLength(40);
  const paused = (await call(`${app.url}/v1/streams/${id}`, { key: org.key })).body;
  expect(paused).toMatchObject({ state: 'paused' });
  expect([41, 42]).toContain(paused.delivered_seq);
  expect((paused.delivered_seq as number) + (paused.lag_events as number)).toBe(102);
  expect(paused.lag_seconds).toBeGreaterThan(0);
  await call(`${app.url}/v1/streams/${id}/resume`, { key: org.key, body: {} });
  // …and the resume's record, 103.
  await eventually('caught up after resuming', () => Promise.resolve(webhookItems(receiver).length >= 103));
  expect(seqsOf(webhookItems(receiver))).toEqual(upTo(103));
  expect(sentItems(receiver)).toHaveLength(100);
  expect(hang.receiver.accepted).toEqual([]);
  await Promise.all([receiver.stop(), hang.receiver.stop()]);
});

test('management: secrets never shown again, five streams at most, another organization\'s stream is not found, bad destinations are 400', async () => {
  const org = await app.org();
  const other = await app.org();
  const splunk = await call(`${app.url}/v1/streams`, { key: org.key, body: { name: 'splunk', destination: { type: 'splunk', url: 'http://127.0.0.1:9/', token: 'hec-secret-token' } } });
  expect(splunk.status).toBe(201);
  expect(splunk.text).not.toContain('hec-secret-token');
  expect(splunk.body.signing_secret).toBeNull();
  const stored = await app.collections.streams.findOne({ _id: splunk.body.id });
  expect(JSON.stringify(stored)).not.toContain('hec-secret-token');
  const list = await call(`${app.url}/v1/streams`, { key: org.key });
  expect(list.text).not.toContain('hec-secret-token');
  expect(list.body.data.map((s: { id: string }) => s.id)).toEqual([splunk.body.id]);
  expect((await call(`${app.url}/v1/streams/${splunk.body.id}`, { key: other.key })).status).toBe(404);
  expect((await call(`${app.url}/v1/streams/${splunk.body.id}`, { key: other.key, method: 'DELETE' })).status).toBe(404);
  expect((await call(`${app.url}/v1/streams`, { key: other.key })).body.data).toEqual([]);
  const created = await Promise.all(Array.from({ length: 6 }, (_, i) => call(`${app.url}/v1/streams`, { key: org.key, body: { name: `w${i}`, destination: { type: 'webhook', url: 'http://127.0.0.1:9/' } } })));
  expect(created.map((r) => r.status).sort()).toEqual([201, 201, 201, 201, 409, 409]);
  expect(created.find((r) => r.status === 409)?.body).toMatchObject({ code: 'STREAM_LIMIT_REACHED' });
  for (const body of [
    { name: 'x', destination: { type: 'webhook', url: 'ftp://example.com/' } },
    { name: 'x', destination: { type: 'webhook', url: 'https://user:pw@example.com/' } },
    { name: 'x', destination: { type: 'carrier-pigeon', url: 'https://example.com/' } },
    { name: 'x', destination: { type: 'splunk', url: 'https://example.com/' } },
    { name: '', destination: { type: 'webhook', url: 'https://example.com/' } },
    { name: 'x', destination: { type: 'webhook', url: 'https://example.com/' }, format: 'xml' },
    { name: 'x', destination: { type: 'webhook', url: 'https://example.com/' }, start_seq: 0 },
  ]) {
    const res = await call(`${app.url}/v1/streams`, { key: other.key, body });
    expect({ body, status: res.status }).toEqual({ body, status: 400 });
  }
  expect((await call(`${app.url}/v1/streams/${splunk.body.id}`, { key: org.key, method: 'DELETE' })).body).toEqual({ deleted: true });
  expect((await call(`${app.url}/v1/streams/${splunk.body.id}`, { key: org.key })).status).toBe(404);
});

test('the test delivery says what the destination answered', async () => {
  const org = await app.org();
  const { id, receiver } = await webhookStream(org);
  const ok = await call(`${app.url}/v1/streams/${id}/test`, { key: org.key, body: {} });
  // The destination's HTTP status whenever it answered, a 2xx included (openapi.json's `status`).
  // `retrying` depends on whether an attempt was refused before the test (the secret is known only after creation): test/streams/retry.test.ts covers it.
  expect(ok.body).toMatchObject({ ok: true, status: 200, error: null });
  expect((JSON.parse(receiver.accepted[0]?.body ?? '[]') as unknown[])[0]).toMatchObject({ test: true, stream_id: id });
  receiver.mode = { kind: 'status', status: 401 };
  const refused = await call(`${app.url}/v1/streams/${id}/test`, { key: org.key, body: {} });
  expect(refused.body).toMatchObject({ ok: false, status: 401 });
  await receiver.stop();
  const down = await call(`${app.url}/v1/streams/${id}/test`, { key: org.key, body: {} });
  expect(down.body.error).toMatch(/ECONNREFUSED/);
});
