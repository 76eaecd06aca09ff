/**
 * Producer signatures on the dashboard's side, over real HTTP: `dashboard.keys.bindProducer` and the
 * key list's `producer_key`; `dashboard.events.producerBinding`, the log's binding entry of one key of the
 * session's organization (null for any other key, another organization's included); and the event
 * page's check (lib/producerCheck.ts) run here on Node's WebCrypto, as the Chromium suite runs it: a
 * signed event verifies with the key the log binds, the binding entry's inclusion proven the same way;
 * an unsigned event of a bound key that the service's own write path stored fails, as does a changed
 * signature, or a signature whose key's binding the server does not give.
 */
import { contentOf } from '../../src/domain/eventFields';
import type { TEvent } from '../../src/domain/event';
import type { TInclusionProof } from '../../src/domain/ledger/schemas';
import { PRODUCER_MESSAGES } from '../../src/services/producerKeys';
import { checkProducerSignature, type ProvenBinding } from '../../src/dashboard/lib/producerCheck';
import type { KeyValueStore } from '../../src/dashboard/lib/ledgerTrust';
import { MemoryStore } from '../helpers/memoryStore';
import { call, eventBody } from '../helpers/api';
import { startTestApp, type TestApp } from '../helpers/harness';
import { producerSigner, signedBody, storedPastTheDoor } from '../helpers/producer';
import { eventuallySucceeds } from '../helpers/waiting';
import { failure, uniqueEmail, WebSession } from '../helpers/webSession';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ label: 'dashproducer' });
});
afterAll(() => app.close());

/** A signed-in owner with a dashboard-made key, and the organization's id. */
async function owner() {
  const web = new WebSession(app.url);
  await web.signup(uniqueEmail('producer'));
  const org = (await web.client.account.me.query())?.organization.id ?? '';
  const { key, apiKey } = await web.client.dashboard.keys.create.mutate({ name: 'signed-service' });
  return { web, org, key, keyId: apiKey.id };
}

const proofOf = (web: WebSession, id: string): Promise<TInclusionProof> =>
  eventuallySucceeds(`the proof of ${id}`, () => web.client.dashboard.events.proof.query({ id }), 10_000);

/** What the event page does: the binding entry and its proof from the session procedures, then the check. */
async function pageCheck(web: WebSession, org: string, event: TEvent, store: KeyValueStore = new MemoryStore(), override?: { binding: TEvent | null }) {
  const servedKey = (await web.client.dashboard.ledger.summary.query()).verifier_key;
  const entry = override ? override.binding : await web.client.dashboard.events.producerBinding.query({ api_key_id: event.api_key_id });
  const binding: ProvenBinding | null = entry ? { entry, proof: await proofOf(web, entry.id) } : null;
  await proofOf(web, event.id);
  return checkProducerSignature(store, org, servedKey, event, binding, async (from, to) => (await web.client.dashboard.ledger.consistency.query({ from, to })).proof);
}

test('bindProducer binds an active key before its first event; the list shows it; a key with events, a bad key text or another organization\'s key is refused', async () => {
  const { web, key, keyId } = await owner();
  const producer = producerSigner();
  expect((await web.client.dashboard.keys.list.query()).map((k) => k.producer_key)).toEqual([null]);
  expect(await failure(web.client.dashboard.keys.bindProducer.mutate({ id: keyId, producer_key: 'not a key' }))).toMatchObject({ status: 400, code: 'VALIDATION_FAILED', message: PRODUCER_MESSAGES.badKey });
  expect(await web.client.dashboard.keys.bindProducer.mutate({ id: keyId, producer_key: `${producer.text}\n` })).toEqual({ api_key_id: keyId, producer_key: producer.text });
  expect((await web.client.dashboard.keys.list.query()).map((k) => k.producer_key)).toEqual([producer.text]);

  // A key that has sent an event cannot be bound: 409, with the message the Keys page shows.
  const used = await web.client.dashboard.keys.create.mutate({ name: 'used' });
  expect((await call(`${app.url}/v1/events`, { key: used.key, body: eventBody() })).status).toBe(201);
  expect(await failure(web.client.dashboard.keys.bindProducer.mutate({ id: used.apiKey.id, producer_key: producer.text }))).toMatchObject({ status: 409, code: 'PRODUCER_KEY_CONFLICT', message: PRODUCER_MESSAGES.conflict });

  const stranger = new WebSession(app.url);
  await stranger.signup(uniqueEmail('producer'));
  expect(await failure(stranger.client.dashboard.keys.bindProducer.mutate({ id: keyId, producer_key: producer.text }))).toMatchObject({ status: 404 });
  // The bound key still sends signed events.
  expect((await call(`${app.url}/v1/events`, { key, body: signedBody(eventBody(), (await web.client.account.me.query())?.organization.id ?? '', producer) })).status).toBe(201);
});

test('producerBinding answers the log\'s binding entry of a key of the session\'s organization, and null for any other', async () => {
  const { web, org, keyId } = await owner();
  const producer = producerSigner();
  expect(await web.client.dashboard.events.producerBinding.query({ api_key_id: keyId })).toBeNull();
  await web.client.dashboard.keys.bindProducer.mutate({ id: keyId, producer_key: producer.text });
  const entry = await web.client.dashboard.events.producerBinding.query({ api_key_id: keyId });
  expect(entry).toMatchObject({ api_key_id: 'audit_ledger', action: 'audit_ledger.key.producer_bound', resource_id: keyId, organization_id: org, metadata: { producer_key: producer.text } });
  // The same entry as the events explorer reads.
  expect(await web.client.dashboard.events.get.query({ id: entry?.id ?? '' })).toEqual(entry);
  // Its key's organization only: another account asking for it gets null, as for a key that does not exist.
  const stranger = new WebSession(app.url);
  await stranger.signup(uniqueEmail('producer'));
  expect(await stranger.client.dashboard.events.producerBinding.query({ api_key_id: keyId })).toBeNull();
  expect(await web.client.dashboard.events.producerBinding.query({ api_key_id: 'key_none' })).toBeNull();
  expect(await failure(new WebSession(app.url).client.dashboard.events.producerBinding.query({ api_key_id: keyId }))).toEqual({ status: 401, code: 'NOT_SIGNED_IN', message: 'Not signed in' });
  expect(await failure(web.client.dashboard.events.producerBinding.query({ api_key_id: '' }))).toMatchObject({ status: 400, code: 'VALIDATION_FAILED' });
});

test('the event page\'s check: signed by the key the log binds; unsigned, changed, or with its binding withheld, it fails naming why', async () => {
  const { web, org, key, keyId } = await owner();
  const producer = producerSigner();
  await web.client.dashboard.keys.bindProducer.mutate({ id: keyId, producer_key: producer.text });
  const created = await call(`${app.url}/v1/events`, { key, body: signedBody(eventBody({ actor: { id: 'signed' } }), org, producer) });
  expect(created.status).toBe(201);
  const event = await web.client.dashboard.events.get.query({ id: created.body.event.id });
  const entry = await web.client.dashboard.events.producerBinding.query({ api_key_id: keyId });

  const store = new MemoryStore();
  expect(await pageCheck(web, org, event, store)).toEqual({
    kind: 'signed', producerKey: producer.text, bindingId: entry?.id, bindingSeq: expect.any(Number), bindingTreeSize: expect.any(Number),
  });

  // The content changed (as shown), or the signature replaced by one of another producer.
  const changed = await pageCheck(web, org, { ...event, actor_id: 'mallory' }, store);
  expect(changed).toEqual({ kind: 'failed', failures: [`event ${event.id}: its producer signature does not verify with producer key ${producer.text} (its content is not what the producer signed)`] });
  const other = signedBody(eventBody({ actor: { id: 'signed' } }), org, producerSigner('other.test'));
  expect((await pageCheck(web, org, { ...event, producer_signature: other.producer_signature as string }, store)).kind).toBe('failed');

  // A signed event whose key's binding the server does not give (hidden, or none): nothing unverifiable passes as signed.
  expect(await pageCheck(web, org, event, store, { binding: null })).toEqual({ kind: 'failed', failures: [`1 event(s) of API key ${keyId} carry a producer signature, but the log binds no producer key to it: ${event.id}`] });
  // A binding entry of another key, given as this key's.
  const otherKey = await web.client.dashboard.keys.create.mutate({ name: 'another' });
  await web.client.dashboard.keys.bindProducer.mutate({ id: otherKey.apiKey.id, producer_key: producer.text });
  const otherEntry = await web.client.dashboard.events.producerBinding.query({ api_key_id: otherKey.apiKey.id });
  expect((await pageCheck(web, org, event, store, { binding: otherEntry })).kind).toBe('failed');
  // The binding entry changed (as the server shows it): its inclusion no longer proven.
  const forgedEntry = { ...(entry as TEvent), metadata: { ...(entry as TEvent).metadata, producer_key: producerSigner().text } };
  const forgedCheck = await pageCheck(web, org, event, store, { binding: forgedEntry });
  expect(forgedCheck.kind).toBe('failed');
  expect(forgedCheck.kind === 'failed' && forgedCheck.failures[0]).toBe(`the binding entry ${entry?.id}: the event differs from the one the server hashed`);

  // The service's own write path, past its door (what code holding its key could run): stored, signed into the log, and caught.
  const forged = await storedPastTheDoor(app, org, keyId, contentOf(eventBody({ actor: { id: 'forged' } }), org));
  const unsigned = await web.client.dashboard.events.get.query({ id: forged });
  expect(unsigned.producer_signature).toBeUndefined();
  expect(await pageCheck(web, org, unsigned, store)).toEqual({ kind: 'failed', failures: [`event ${unsigned.id} of API key ${keyId}, bound to producer key ${producer.text}, carries no producer signature`] });
});

test('an unbound key\'s unsigned event has nothing to check', async () => {
  const { web, org, key, keyId } = await owner();
  const created = await call(`${app.url}/v1/events`, { key, body: eventBody() });
  const event = await web.client.dashboard.events.get.query({ id: created.body.event.id });
  expect(event.api_key_id).toBe(keyId);
  expect(await pageCheck(web, org, event)).toEqual({ kind: 'unbound' });
});
