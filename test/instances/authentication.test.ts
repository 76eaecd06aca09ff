/**
 * Instances speak only for themselves (review item 7). The forwarding path is on an internal listener,
 * never the public port; a forward needs the installation's MAC (from the signing key file, never in the
 * database), so one forged with what the database holds is refused; even a correctly authenticated
 * forward is validated like a public request (metadata, the key's organization, a cap exemption); and a
 * fake entry in the instance list, ranked first and answering placements, loses no acknowledged event.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hashApiKey } from '../../src/domain/apiKey';
import { InstanceAuth } from '../../src/ingest/instanceAuth';
import { call, eventBody } from '../helpers/api';
import { expectGapless, metric, statuses, twoProcessesOnOneDatabase } from '../helpers/cluster';
import { TEST_LEDGER_SIGNER, type TestOrg } from '../helpers/harness';
import { quietFor } from '../helpers/waiting';

const cluster = twoProcessesOnOneDatabase('instances');
/** What an instance of this installation holds: the MAC key derived from the shared signing key file. */
const installation = InstanceAuth.fromSigner(TEST_LEDGER_SIGNER);

function draft(org: TestOrg, overrides: Record<string, unknown> = {}) {
  const now = new Date().toISOString();
  return {
    _id: `0190a0a0-0000-7000-8000-${randomUUID().slice(-12)}`, tenant: org.id, ts: now, received_at: now, actor_id: 'intruder', actor_name: null, actor_email: null,
    action: 'a', resource_type: 't', resource_id: 'r', resource_name: null, metadata: '{}', organization_id: org.id, api_key_id: org.keyId, ...overrides,
  };
}

/** The instance id of a server process, from its entry in the instance list. */
async function instanceIdAt(url: string): Promise<string> {
  const docs = await cluster.app().collections.instances.find({}).toArray();
  const found = docs.find((d) => d.url === url);
  if (!found) throw new Error(`no instance at ${url}`);
  return found._id;
}

async function forward(url: string, body: string, mac: string | undefined): Promise<{ status: number; text: string; mac: string | null }> {
  const res = await fetch(`${url}/internal/forward-events`, { method: 'POST', headers: { 'content-type': 'application/json', ...(mac ? { 'x-instance-mac': mac } : {}) }, body });
  return { status: res.status, text: await res.text(), mac: res.headers.get('x-instance-mac') };
}

test('the forwarding path is not on the public port, and a forward forged with what the database holds is refused', async () => {
  const app = cluster.app();
  const org = await app.org({ monthlyCap: 1000 });
  const [one] = cluster.servers();
  const body = JSON.stringify({ writes: [{ drafts: [draft(org)], key_hash: hashApiKey(org.key), cap_exempt: false }] });
  expect((await fetch(`${one.url}/internal/forward-events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status).toBe(404);

  const entry = await app.collections.instances.findOne({ url: one.internalUrl });
  if (!entry) throw new Error('no instance entry');
  // The database holds no secret: the entry's own MAC, or none at all, forges nothing.
  expect(Object.keys(entry).sort()).toEqual(['_id', 'beat', 'mac', 'started_at', 'url']);
  for (const mac of [undefined, entry.mac, 'x'.repeat(64), InstanceAuth.alone().mac('forward', entry._id, body)]) {
    expect((await forward(one.internalUrl, body, mac)).status).toBe(401);
  }
  expect(await app.collections.events.countDocuments({ tenant: org.id })).toBe(0);

  // With the installation's key, to the right instance, it is taken, and the answer is authenticated.
  const mac = installation.mac('forward', entry._id, body);
  const accepted = await forward(one.internalUrl, body, mac);
  expect(accepted.status).toBe(200);
  expect(installation.check(accepted.mac ?? undefined, 'answer', mac, accepted.text)).toBe(true);
  expect(await app.collections.events.countDocuments({ tenant: org.id })).toBe(1);
  // Bound to the receiver: the same forward sent to the other instance is refused.
  const [, two] = cluster.servers();
  expect((await forward(two.internalUrl, body, mac)).status).toBe(401);
});

test('an authenticated forward is still validated like a public request: metadata, the key\'s organization, a cap exemption', async () => {
  const app = cluster.app();
  const org = await app.org({ monthlyCap: 1000 });
  const other = await app.org({ monthlyCap: 1000 });
  const [one] = cluster.servers();
  const id = await instanceIdAt(one.internalUrl);
  const send = (drafts: unknown[], capExempt = false) => {
    const body = JSON.stringify({ writes: [{ drafts, key_hash: hashApiKey(org.key), cap_exempt: capExempt }] });
    return forward(one.internalUrl, body, installation.mac('forward', id, body));
  };
  // Metadata that is not a JSON object: refused whole (nothing stored, the organization's checkpoints go on).
  expect((await send([draft(org, { metadata: 'not json' })])).status).toBe(400);
  expect((await send([draft(org, { metadata: '[1]' })])).status).toBe(400);
  // Into another organization with this key: refused by the writer, for that write.
  const intoOther = await send([draft(other, { api_key_id: org.keyId })]);
  expect(JSON.parse(intoOther.text)).toEqual({ results: [{ error: { code: 'INVALID_API_KEY', message: 'Invalid API key' } }] });
  // A cap exemption no idempotency claim backs.
  const exempt = await send([draft(org, { idempotency_key: 'never-claimed' })], true);
  expect((JSON.parse(exempt.text) as { results: { error: unknown }[] }).results[0]?.error).toEqual({ code: 'VALIDATION_FAILED', message: 'Invalid request: the cap exemption is not backed by an idempotency claim' });
  expect(await app.collections.events.countDocuments({ tenant: { $in: [org.id, other.id] } })).toBe(0);

  // The organization still gets checkpoints and list answers.
  const created = await call(`${one.url}/v1/events`, { key: org.key, body: eventBody() });
  expect(created.status).toBe(201);
  expect((await call(`${one.url}/v1/events/${created.body.event.id}/proof`, { key: org.key })).status).toBe(200);
  expect((await call(`${one.url}/v1/events`, { key: org.key })).body.data).toHaveLength(1);
});

test('a fake instance entry ranked first, answering placements, gets no acknowledged event lost', async () => {
  const app = cluster.app();
  const org = await app.org({ monthlyCap: 1000 });
  const [one, two] = cluster.servers();
  // A stub that answers every forward with placements, as a writer would, and stores nothing.
  let forwarded = 0;
  const stub: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      forwarded++;
      const writes = (JSON.parse(text) as { writes: { drafts: unknown[] }[] }).writes;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ results: writes.map((w) => ({ placements: w.drafts.map((_, i) => ({ seq: 1000 + i, month: '2026-11', month_seq: 1000 + i })) })) }));
    });
  });
  stub.listen(0, '127.0.0.1');
  await new Promise((resolve) => stub.once('listening', resolve));
  // An id that ranks first (writers are ranked by the SHA-256 of their id, highest first).
  let fakeId = randomUUID();
  while (!createHash('sha256').update(fakeId).digest('hex').startsWith('ff')) fakeId = randomUUID();
  const instances = app.collections.instances;
  const url = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
  const real = await instances.findOne({});
  await instances.insertOne({ _id: fakeId, url, mac: real?.mac ?? '', beat: 0, started_at: new Date() });
  const beating = setInterval(() => { void instances.updateOne({ _id: fakeId }, { $inc: { beat: 1 } }); }, 300);
  try {
    await quietFor(2500, 'two of the processes\' heartbeats (1 s each, src/ingest/instances.ts) in which each reads the fake entry and its rising beat, and must not take it for a writer');
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => call(`${(i % 2 ? one : two).url}/v1/events`, { key: org.key, body: eventBody() })));
    expect(statuses(results)).toEqual({ 201: 10 });
    await expectGapless(app, org, 10);
    expect(forwarded).toBe(0);
    // Each process still takes only the two real instances for live.
    expect(await metric(one.metricsUrl, 'instances_live')).toBe(2);
  } finally {
    clearInterval(beating);
    stub.close();
    await instances.deleteOne({ _id: fakeId });
  }
});
