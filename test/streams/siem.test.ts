/**
 * Splunk HEC and Datadog Logs streams against stand-ins that check the documented request shapes (the
 * real services cannot run here), and the OCSF format: API Activity (6003) with our fields mapped and
 * the original event and receipt under `unmapped`. Bad destinations (an unknown host, TLS refused, a
 * 4xx, one that never answers) only ever mark their own stream.
 */
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { call, eventBody, eventually } from '../helpers/api';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { datadogReceiver, splunkReceiver, webhookItems, webhookReceiver } from '../helpers/streamReceivers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ label: 'siem', env: { STREAM_MAX_BACKOFF_MS: '300', STREAM_FAILING_AFTER_MS: '800', STREAM_TIMEOUT_MS: '1500' } });
});
afterAll(() => app.close());

async function fill(org: TestOrg, count: number): Promise<void> {
  const events = Array.from({ length: count }, (_, i) => eventBody({ actor: { id: `a${i}`, name: i % 2 ? null : `Name ${i}` }, action: i % 3 === 0 ? 'invoice.deleted' : 'invoice.created' }));
  expect((await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events } })).status).toBe(201);
}

async function stream(org: TestOrg, destination: Record<string, unknown>, format = 'json'): Promise<string> {
  const res = await call(`${app.url}/v1/streams`, { key: org.key, body: { name: String(destination.type), destination, format, start_seq: 1 } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

const stateOf = async (org: TestOrg, id: string) => (await call(`${app.url}/v1/streams/${id}`, { key: org.key })).body;

test('Splunk HEC: the documented envelope, the token, the checkpoint as its own sourcetype; OCSF items', async () => {
  const receiver = await splunkReceiver('hec-token').start();
  const org = await app.org();
  await fill(org, 30);
  await stream(org, { type: 'splunk', url: receiver.url, token: 'hec-token', index: 'audit', sourcetype: 'audit_ledger:ocsf' }, 'ocsf');
  // The 30 events and the stream's own creation record (audit_ledger.stream.created, 31), and a checkpoint.
  await eventually('31 events at Splunk', () => Promise.resolve(receiver.accepted.flatMap((r) => r.body.split('\n')).length >= 32));
  expect(receiver.refused).toEqual([]);
  const objects = receiver.accepted.flatMap((r) => r.body.split('\n').map((line) => JSON.parse(line) as Record<string, any>));
  const events = objects.filter((o) => o.sourcetype === 'audit_ledger:ocsf');
  expect(events).toHaveLength(31);
  expect(events.at(-1)?.event.api.operation).toBe('audit_ledger.stream.created');
  expect(objects.filter((o) => o.sourcetype === 'audit_ledger:checkpoint').length).toBeGreaterThan(0);
  expect(new URL(receiver.accepted[0]?.headers.host ? `http://${receiver.accepted[0].headers.host}` : receiver.url).port).toBe(new URL(receiver.url).port);
  const first = events[0] as Record<string, any>;
  expect(first).toMatchObject({ index: 'audit', source: `audit-ledger:${org.id}` });
  const original = first.event.unmapped.event;
  expect(first.time).toBe(Date.parse(original.timestamp) / 1000);
  expect(first.event).toMatchObject({
    class_uid: 6003, category_uid: 6, activity_id: 4, type_uid: 600304, severity_id: 1,
    time: Date.parse(original.timestamp),
    metadata: { version: '1.3.0', uid: original.id, tenant_uid: org.id, product: { name: 'Audit Ledger' } },
    actor: { user: { uid: 'a0', name: 'Name 0' } },
    api: { operation: 'invoice.deleted' },
    resources: [{ type: 'user', uid: 'user_456', name: 'John Doe' }],
    unmapped: { receipt: { leaf_index: 0 } },
  });
  expect((events[1] as Record<string, any>).event.actor.user.name).toBeUndefined();
  expect((events[1] as Record<string, any>).event.activity_id).toBe(1);
  const read = await call(`${app.url}/v1/events/${original.id}`, { key: org.key });
  expect(original).toEqual(read.body);
  await receiver.stop();
});

test('Datadog Logs: DD-API-KEY, a JSON array within the documented limits, messages that parse to the items', async () => {
  const receiver = await datadogReceiver('dd-key').start();
  const org = await app.org();
  await fill(org, 40);
  await stream(org, { type: 'datadog', url: receiver.url, api_key: 'dd-key', service: 'billing', tags: 'env:test' });
  // The 40 events and the stream's own creation record (41), and a checkpoint.
  await eventually('41 events at Datadog', () => Promise.resolve(receiver.accepted.flatMap((r) => JSON.parse(r.body) as unknown[]).length >= 42));
  expect(receiver.refused).toEqual([]);
  const entries = receiver.accepted.flatMap((r) => JSON.parse(r.body) as Record<string, string>[]);
  const events = entries.filter((e) => e.ddsource === 'audit-ledger');
  expect(events).toHaveLength(41);
  expect(events[0]).toMatchObject({ service: 'billing', ddtags: `audit_ledger_org:${org.id},env:test` });
  const items = events.map((e) => JSON.parse(e.message ?? '') as { event: { actor_id: string }; receipt: { leaf_index: number } });
  expect(items.map((i) => i.receipt.leaf_index)).toEqual(Array.from({ length: 41 }, (_, i) => i));
  expect(items[5]?.event.actor_id).toBe('a5');
  const checkpoints = entries.filter((e) => e.ddsource === 'audit-ledger-checkpoint').map((e) => JSON.parse(e.message ?? '') as { audit_ledger_checkpoint: { size: number; note: string } });
  expect(checkpoints.at(-1)?.audit_ledger_checkpoint.size).toBeGreaterThanOrEqual(40);
  await receiver.stop();
});

test('bad destinations (unknown host, TLS refused, a 4xx, one that never answers) fail their own stream and no other', async () => {
  // A port that accepts TCP and speaks no TLS: the handshake fails.
  const sockets = new Set<Socket>();
  const notTls = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.end('not TLS\n');
  });
  notTls.listen(0, '127.0.0.1');
  await once(notTls, 'listening');
  const slow = webhookReceiver(() => 'whsec_AAAA');
  slow.mode = { kind: 'hang' };
  await slow.start();
  const refusing = await splunkReceiver('right-token').start();
  const bad = await app.org();
  const ids = {
    dns: await stream(bad, { type: 'webhook', url: 'http://no-such-host.invalid/hook' }),
    tls: await stream(bad, { type: 'webhook', url: `https://127.0.0.1:${(notTls.address() as AddressInfo).port}/` }),
    status4xx: await stream(bad, { type: 'splunk', url: refusing.url, token: 'wrong-token' }),
    slow: await stream(bad, { type: 'webhook', url: slow.url }),
  };
  await fill(bad, 20);
  let secret = '';
  const good = webhookReceiver(() => secret);
  await good.start();
  const org = await app.org();
  const created = await call(`${app.url}/v1/streams`, { key: org.key, body: { name: 'good', destination: { type: 'webhook', url: good.url }, start_seq: 1 } });
  secret = created.body.signing_secret;
  await fill(org, 50);
  await eventually('the good stream delivered', () => Promise.resolve(webhookItems(good).length >= 50));
  const states = await eventually('every bad stream failing', async () => {
    const all = await Promise.all(Object.entries(ids).map(async ([what, id]) => [what, await stateOf(bad, id)] as const));
    return all.every(([, s]) => s.state === 'failing') && Object.fromEntries(all.map(([what, s]) => [what, s.last_error as string]));
  }, 20_000);
  expect(states.dns).toMatch(/DNS|ENOTFOUND|EAI_AGAIN/);
  expect(states.tls).toMatch(/TLS|EPROTO|SSL|ECONNRESET|socket/i);
  expect(states.status4xx).toMatch(/HTTP 400/);
  expect(states.slow).toMatch(/no answer within 1500 ms/);
  expect((await stateOf(org, created.body.id as string)).state).toBe('active');
  for (const socket of sockets) socket.destroy();
  await Promise.all([good.stop(), slow.stop(), refusing.stop(), new Promise((resolve) => notTls.close(resolve))]);
});
