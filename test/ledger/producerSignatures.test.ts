/**
 * Producer signatures (docs/trust-model.md, "Producer signatures"): a key bound to a producer's Ed25519 key
 * before its first event (REST, dashboard procedure, CLI) has every event refused unless the producer
 * signed exactly its content; the signature is kept, shown and exported; `verify` checks it from the
 * log's own binding entries; and an unsigned event of a bound key that the service's own write path
 * stores (someone holding its signing key and database) fails verification, naming it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { call, eventBody } from '../helpers/api';
import { twoProcessesOnOneDatabase } from '../helpers/cluster';
import { mongoUri, startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from '../helpers/harness';
import { runCli, testLedgerKeyFile } from '../helpers/processes';
import { producerSigner, signedBody, storedPastTheDoor } from '../helpers/producer';
import { contentOf } from '../../src/domain/eventFields';
import { PRODUCER_MESSAGES } from '../../src/services/producerKeys';

let app: TestApp;
let dir: string;
beforeAll(async () => {
  app = await startTestApp({ label: 'producer' });
  dir = mkdtempSync(join(tmpdir(), 'producer-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await app.close();
});

const bind = (org: { key: string }, producerKey: string) => call(`${app.url}/v1/producer-key`, { key: org.key, method: 'PUT', body: { producer_key: producerKey } });
const post = (org: { key: string }, body: unknown) => call(`${app.url}/v1/events`, { key: org.key, body });
const postBatch = (org: { key: string }, events: unknown[]) => call(`${app.url}/v1/events/batch`, { key: org.key, body: { events } });

async function exportAndVerify(org: TestOrg, name: string) {
  const out = join(dir, `${name}.json`);
  expect((await runCli(['export', '--url', app.url, '--key', org.key, '--out', out, '--with-proofs'], {})).code).toBe(0);
  return runCli(['verify', '--verifier-key', TEST_LEDGER_SIGNER.text, '--events', out, '--proofs', `${out}.proofs.json`], {});
}

test('a bound key\'s events must be signed by its producer; the signature is kept, shown, exported and verified', async () => {
  const org = await app.org();
  const producer = producerSigner();
  const bound = await bind(org, producer.text);
  expect(bound.status).toBe(200);
  expect(bound.body).toEqual({ api_key_id: org.keyId, producer_key: producer.text });
  expect((await bind(org, ` ${producer.text}\n`)).body).toEqual(bound.body);
  const other = producerSigner('other.test');
  const rebind = await bind(org, other.text);
  expect(rebind.status).toBe(409);
  expect(rebind.body.code).toBe('PRODUCER_KEY_CONFLICT');

  const signed = signedBody(eventBody({ timestamp: '2026-03-01T12:00:00+02:00', metadata: { b: 1, a: [1.5, 'é'] } }), org.id, producer);
  const created = await post(org, signed);
  expect(created.status).toBe(201);
  expect(created.body.event.producer_signature).toBe(signed.producer_signature);
  expect(created.body.event.timestamp).toBe('2026-03-01T10:00:00.000Z');
  const read = await call(`${app.url}/v1/events/${created.body.event.id}`, { key: org.key });
  expect(read.body).toEqual(created.body.event);

  const refused = async (body: unknown, message: string, field = 'producer_signature') => {
    const res = await post(org, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 'EVENT_SIGNATURE_INVALID', message, fields: [field] });
  };
  await refused(eventBody({ timestamp: '2026-03-01T12:00:00Z' }), PRODUCER_MESSAGES.missing);
  await refused({ ...signed, action: 'user.deleted' }, PRODUCER_MESSAGES.invalid);
  await refused({ ...signed, metadata: { b: 2, a: [1.5, 'é'] } }, PRODUCER_MESSAGES.invalid);
  await refused(signedBody(eventBody(), org.id, other), PRODUCER_MESSAGES.invalid);
  await refused({ ...signed, timestamp: undefined }, PRODUCER_MESSAGES.noTimestamp);
  await refused({ ...signed, producer_signature: 'not base64!' }, PRODUCER_MESSAGES.malformed);
  // Signed for another organization_id than the one stored (the key's own, when the body gives none).
  await refused(signedBody(eventBody(), 'org_other', producer), PRODUCER_MESSAGES.invalid);
  expect((await post(org, signedBody(eventBody({ organization_id: 'org_customer' }), 'ignored', producer))).status).toBe(201);

  const batch = await postBatch(org, [signedBody(eventBody(), org.id, producer), eventBody({ timestamp: '2026-03-01T12:00:00Z' }), signedBody(eventBody(), org.id, other)]);
  expect(batch.status).toBe(400);
  expect(batch.body).toEqual({ code: 'EVENT_SIGNATURE_INVALID', message: PRODUCER_MESSAGES.missing, fields: ['events[1].producer_signature', 'events[2].producer_signature'] });
  const good = await postBatch(org, Array.from({ length: 5 }, (_, i) => signedBody(eventBody({ actor: { id: `p${i}` } }), org.id, producer)));
  expect(good.status).toBe(201);
  expect(await app.collections.events.countDocuments({ tenant: org.id, api_key_id: org.keyId })).toBe(7);

  // The binding is the service's own entry in the organization's log, under its key id.
  // Bound twice with the same key: recorded once.
  const entries = await app.collections.events.find({ tenant: org.id, action: 'audit_ledger.key.producer_bound' }).toArray();
  expect(entries.length).toBe(1);
  expect(entries.every((e) => e.api_key_id === 'audit_ledger' && e.resource_id === org.keyId && JSON.parse(e.metadata).producer_key === producer.text)).toBe(true);

  const verified = await exportAndVerify(org, 'signed');
  expect(verified.stdout).toContain('producer signatures: 7 event(s) of 1 bound API key(s) carry a valid signature');
  expect(verified.code).toBe(0);
});

test('an unbound key sends no signature; a key that has sent an event cannot be bound; a bad producer key is a 400', async () => {
  const org = await app.org();
  const producer = producerSigner();
  const unbound = await post(org, signedBody(eventBody(), org.id, producer));
  expect(unbound.status).toBe(400);
  expect(unbound.body).toEqual({ code: 'EVENT_SIGNATURE_INVALID', message: PRODUCER_MESSAGES.unbound, fields: ['producer_signature'] });
  // A refused event is not a use: the key can still be bound.
  const { key: usedKey } = await app.key(org.id);
  expect((await post({ key: usedKey }, eventBody())).status).toBe(201);
  const late = await bind({ key: usedKey }, producer.text);
  expect(late.status).toBe(409);
  expect(late.body).toEqual({ code: 'PRODUCER_KEY_CONFLICT', message: PRODUCER_MESSAGES.conflict });
  for (const bad of ['nonsense', producer.text.replace(/\+[0-9a-f]{8}\+/, '+00000000+'), TEST_LEDGER_SIGNER.text.slice(0, -4)]) {
    const res = await bind(org, bad);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 'VALIDATION_FAILED', message: PRODUCER_MESSAGES.badKey, fields: ['producer_key'] });
  }
  expect((await bind(org, producer.text)).status).toBe(200);
});

test('a key that sent events before bindings were kept (no claim row) cannot be bound; nor can one its log binds to another key', async () => {
  const org = await app.org();
  expect((await post(org, eventBody())).status).toBe(201);
  // As an installation upgraded from before producer keys: events, and no claim.
  await app.collections.producerClaims.deleteOne({ _id: org.keyId });
  const late = await bind(org, producerSigner().text);
  expect(late.status).toBe(409);
  expect(await app.collections.producerClaims.findOne({ _id: org.keyId })).toMatchObject({ producer_key: null });
  expect(await app.collections.events.countDocuments({ tenant: org.id, action: 'audit_ledger.key.producer_bound' })).toBe(0);

  // A key the log binds: its claim row deleted behind the service's back, another producer key is refused.
  const bound = await app.key(org.id);
  const producer = producerSigner();
  expect((await bind({ key: bound.key }, producer.text)).status).toBe(200);
  await app.collections.producerClaims.deleteOne({ _id: bound.keyId });
  expect((await bind({ key: bound.key }, producerSigner().text)).status).toBe(409);
  expect((await bind({ key: bound.key }, producer.text)).status).toBe(200);
  expect(await app.collections.events.countDocuments({ tenant: org.id, action: 'audit_ledger.key.producer_bound' })).toBe(1);
});

test('a filtered export says which events it could not check; a pinned binding checks them', async () => {
  const org = await app.org();
  const producer = producerSigner();
  expect((await bind(org, producer.text)).status).toBe(200);
  expect((await postBatch(org, [1, 2].map((i) => signedBody(eventBody({ actor: { id: `f${i}` } }), org.id, producer)))).status).toBe(201);
  const forged = await storedPastTheDoor(app, org.id, org.keyId, contentOf(eventBody({ actor: { id: 'f-forged' }, action: 'invoice.refunded' }), org.id));
  const out = join(dir, 'filtered.json');
  expect((await runCli(['export', '--url', app.url, '--key', org.key, '--out', out, '--with-proofs', '--action', 'invoice.refunded'], {})).code).toBe(0);
  const files = ['--verifier-key', TEST_LEDGER_SIGNER.text, '--events', out, '--proofs', `${out}.proofs.json`];
  const unpinned = await runCli(['verify', ...files], {});
  expect(unpinned.stdout).toContain('ok    producer signatures not checked for 1 event(s): this filtered export holds no binding entry of their API keys');
  expect(unpinned.code).toBe(0);
  const pinned = await runCli(['verify', ...files, '--producer', `${org.keyId}=${producer.text}`], {});
  expect(pinned.stdout).toContain(`FAIL  producer signature: event ${forged} of API key ${org.keyId}, bound to producer key ${producer.text}, carries no producer signature`);
  expect(pinned.code).toBe(1);
  const wrongPin = await runCli(['verify', ...files, '--producer', `${org.keyId}=${producerSigner().text}`, '--producer', 'nonsense'], {});
  expect(wrongPin.code).toBe(2);
});

test('the CLI binds a key of an organization, as the operator, and the binding is in the log', async () => {
  const org = await app.org();
  const producer = producerSigner();
  const env = { MONGODB_URI: mongoUri(), MONGODB_DB: app.dbName, LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile() };
  const res = await runCli(['key', 'bind-producer', '--org', org.id, '--producer-key', producer.text, org.keyId, '--json'], env);
  expect(res.stderr).toBe('');
  expect(JSON.parse(res.stdout)).toEqual({ api_key_id: org.keyId, producer_key: producer.text });
  expect((await post(org, eventBody())).status).toBe(400);
  expect((await post(org, signedBody(eventBody(), org.id, producer))).status).toBe(201);
  const again = await runCli(['key', 'bind-producer', '--org', org.id, '--producer-key', producerSigner().text, org.keyId], env);
  expect(again).toMatchObject({ code: 1, stderr: expect.stringContaining(PRODUCER_MESSAGES.conflict) });
  // The operator's record reaches the log through the outbox, under the service's key id.
  await app.services.selfAudit.drainOutbox();
  const entry = await app.collections.events.findOne({ tenant: org.id, action: 'audit_ledger.key.producer_bound' });
  expect(entry).toMatchObject({ api_key_id: 'audit_ledger', actor_id: 'operator', resource_id: org.keyId });
});

test('someone holding the service\'s key and database stores an unsigned event of a bound key: it is signed into the log, and verify names it', async () => {
  const org = await app.org();
  const producer = producerSigner();
  expect((await bind(org, producer.text)).status).toBe(200);
  expect((await postBatch(org, [1, 2, 3].map((i) => signedBody(eventBody({ actor: { id: `real${i}` } }), org.id, producer)))).status).toBe(201);
  // The service's own write path, past its door: what code holding its key could run.
  const forged = await storedPastTheDoor(app, org.id, org.keyId, contentOf(eventBody({ actor: { id: 'forged' }, action: 'payout.approved' }), org.id));
  const result = await exportAndVerify(org, 'forged');
  // Export order is newest first: the forged event comes before the binding entry, and is named once it does.
  expect(result.stdout).toContain(`FAIL  producer signature: 1 event(s) of API key ${org.keyId}, bound to producer key ${producer.text}, carry no producer signature: ${forged}`);
  expect(result.code).toBe(1);
});

describe('two processes on one database', () => {
  const cluster = twoProcessesOnOneDatabase('producer2');

  test('a bound key whose claim row was deleted behind the service\'s back stays bound on a process that never saw it: the log says so', async () => {
    const app = cluster.app();
    const [one, two] = cluster.servers();
    const org = await app.org();
    const { key, keyId } = await app.key(org.id);
    const producer = producerSigner();
    expect((await call(`${one.url}/v1/producer-key`, { key, method: 'PUT', body: { producer_key: producer.text } })).status).toBe(200);
    await app.collections.producerClaims.deleteOne({ _id: keyId });
    expect((await call(`${two.url}/v1/events`, { key, body: eventBody() })).status).toBe(400);
    expect((await call(`${two.url}/v1/events`, { key, body: signedBody(eventBody(), org.id, producer) })).status).toBe(201);
    expect(await app.collections.producerClaims.findOne({ _id: keyId })).toMatchObject({ producer_key: producer.text });
  });

  test('a binding and a first event racing on two processes: exactly one wins, never an unsigned event of a bound key', async () => {
    const app = cluster.app();
    const [one, two] = cluster.servers();
    const org = await app.org();
    const outcomes: string[] = [];
    for (let i = 0; i < 12; i++) {
      const { key } = await app.key(org.id);
      const producer = producerSigner();
      const [bound, sent] = await Promise.all([
        call(`${(i % 2 ? one : two).url}/v1/producer-key`, { key, method: 'PUT', body: { producer_key: producer.text } }),
        // The event leaves 0 to 33 ms after the binding, so that each side wins some of the races.
        sleep(i * 3).then(() => call(`${(i % 2 ? two : one).url}/v1/events`, { key, body: eventBody({ actor: { id: `race${i}` } }) })),
      ]);
      const outcome = `${bound.status}/${sent.status}`;
      outcomes.push(outcome);
      expect(['200/400', '409/201']).toContain(outcome);
      // Afterwards both processes agree: a signed event goes in exactly when the key is bound.
      for (const server of [one, two]) {
        const signed = await call(`${server.url}/v1/events`, { key, body: signedBody(eventBody(), org.id, producer) });
        expect(signed.status).toBe(bound.status === 200 ? 201 : 400);
        expect((await call(`${server.url}/v1/events`, { key, body: eventBody() })).status).toBe(bound.status === 200 ? 400 : 201);
      }
    }
    // Signed events sent to either process (one forwards to the organization's writer) are stored with their signatures.
    const { key } = await app.key(org.id);
    const producer = producerSigner();
    expect((await call(`${one.url}/v1/producer-key`, { key, method: 'PUT', body: { producer_key: producer.text } })).status).toBe(200);
    for (const server of [one, two]) {
      const res = await call(`${server.url}/v1/events/batch`, { key, body: { events: [1, 2, 3].map((n) => signedBody(eventBody({ actor: { id: `fwd${n}` } }), org.id, producer)) } });
      expect(res.status).toBe(201);
    }
    const stored = await app.collections.events.find({ tenant: org.id, actor_id: /^fwd/ }).toArray();
    expect(stored.length).toBe(6);
    expect(stored.every((doc) => typeof doc.producer_signature === 'string' && doc.producer_signature.length === 88)).toBe(true);
    process.stdout.write(`binding/first-event races: ${outcomes.join(' ')}\n`);
  });
});
