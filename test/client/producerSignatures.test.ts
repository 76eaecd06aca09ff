/**
 * Producer signatures from the client package (packages/client/src/producer.ts) against the real
 * service: a key generated in Go's formats, bound with `bindProducerKey`, signs every event the client
 * sends (the delivery queue, createEvent, createBatch); each is stored with its signature, which
 * verifies (`verifyReceipts`, and the `verify` rules over the export); a retry sends the very bytes
 * signed. And what must fail: an answer whose signature is not the one sent, an event in the log that
 * the producer did not sign (stored by someone holding the service's key and database), a client
 * signing with another key than the bound one, a producer key that is not the private key's.
 */
import { AuditLedgerClient, AuditLedgerError, DeliveryQueue, type EventInput, generateProducerKey, producerSigner, type Recorded, type StoredEvent, VerificationError } from '../../packages/client/src';
import { contentOf, type TEvent } from '../../src/domain/eventFields';
import { parsePrivateKey } from '../../src/domain/ledger/note';
import { ProducerSignatureCheck } from '../../src/domain/producerSignature';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from '../helpers/harness';
import { storedPastTheDoor } from '../helpers/producer';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ label: 'client_producer' });
});
afterAll(async () => {
  await app.close();
});

const event = (i: number, overrides: Partial<EventInput> = {}): EventInput => ({
  actor: { id: `user_${i % 5}` },
  action: 'contract.signed',
  resource: { type: 'contract', id: `c${i}` },
  metadata: { i, z: [1, { b: 2, a: 'é' }] },
  ...overrides,
});

/** A fetch that lets `alter` rewrite the JSON answers of the paths it matches, and keeps each write's Idempotency-Key and body. */
function alteringFetch(alter: (path: string, body: Record<string, unknown>) => Record<string, unknown> | undefined = () => undefined, options: { loseFirstAnswer?: boolean } = {}) {
  const writes: { key: string | null; body: string }[] = [];
  let lose = options.loseFirstAnswer ?? false;
  const altered: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    if (typeof init?.body === 'string') writes.push({ key: headers.get('idempotency-key'), body: init.body });
    const response = await fetch(input, init);
    const path = new URL(input instanceof Request ? input.url : String(input)).pathname;
    if (lose && path === '/v1/events/batch') {
      // Stored, and the answer never arrives: the queue must retry with the same key and body.
      lose = false;
      await response.arrayBuffer();
      throw new TypeError('fetch failed: the connection was reset');
    }
    if (!response.ok) return response;
    const body = (await response.json()) as Record<string, unknown>;
    return Response.json(alter(path, body) ?? body, { status: response.status, headers: response.headers });
  };
  return { fetch: altered, writes };
}

const verifyOptions = (org: TestOrg) => ({ verifierKey: TEST_LEDGER_SIGNER.text, organization: org.id, waitMs: 30_000 });

/** The organization's whole log as exported (API form), through the client. */
async function exported(client: AuditLedgerClient): Promise<TEvent[]> {
  const { body } = await client.exportEvents({ format: 'json' });
  return JSON.parse(await new Response(body).text()) as TEvent[];
}

test('a generated key, bound with bindProducerKey: 50 events through the queue are stored signed, a retry resends the bytes signed, and every signature verifies', async () => {
  const org = await app.org();
  const pair = await generateProducerKey('producer.example');
  expect(pair.privateKey).toMatch(/^PRIVATE\+KEY\+producer\.example\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
  // Go's format, byte for byte: the service's own parser of private key texts finds the same key and id.
  expect(parsePrivateKey(pair.privateKey).text).toBe(pair.producerKey);
  const producer = await producerSigner(pair.privateKey, { organizationId: org.id });
  expect(producer.producerKey).toBe(pair.producerKey);

  const wire = alteringFetch(undefined, { loseFirstAnswer: true });
  const client = new AuditLedgerClient({ url: app.url, apiKey: org.key, fetch: wire.fetch, producer, verify: verifyOptions(org) });
  expect(await client.bindProducerKey()).toEqual({ api_key_id: org.keyId, producer_key: pair.producerKey });
  expect(await client.bindProducerKey(pair.producerKey)).toEqual({ api_key_id: org.keyId, producer_key: pair.producerKey });

  const retries: string[] = [];
  const queue = new DeliveryQueue(client, { maxBatch: 20, flushIntervalMs: 10, backoff: { initialMs: 10, maxMs: 50 }, onRetry: (error) => retries.push(error.message) });
  const before = Date.now();
  const sent = Array.from({ length: 50 }, (_, i) => {
    // A given timestamp is sent (and signed) as the service stores it: UTC, milliseconds, finer digits cut.
    if (i % 10 === 3) return event(i, { timestamp: '2026-03-01T12:00:00.123456+02:00' });
    if (i % 10 === 7) return event(i, { organization_id: 'customer_7', actor: { id: 'u7', name: null } });
    return event(i);
  });
  const recorded = await Promise.all(sent.map((e) => queue.record(e)));
  const after = Date.now();
  await queue.close();

  // The first batch's answer was lost: its retry carried the same key and the same bytes, and was answered by the replay.
  expect(retries).toEqual(['POST /v1/events/batch: fetch failed: the connection was reset']);
  const batches = wire.writes.filter((w) => w.key !== null);
  expect(batches[1]).toEqual(batches[0]);
  const bodies = new Map<string | null, Set<string>>();
  for (const { key, body } of batches) bodies.set(key, (bodies.get(key) ?? new Set()).add(body));
  expect([...bodies.values()].every((sentWithKey) => sentWithKey.size === 1)).toBe(true);
  expect(batches.length).toBe(bodies.size + 1);
  expect([...bodies.values()].reduce((n, [body]) => n + (JSON.parse(body as string) as { events: unknown[] }).events.length, 0)).toBe(50);

  const events = recorded.map((r) => r.event as StoredEvent);
  expect(events.map((e) => e.metadata.i)).toEqual(sent.map((_, i) => i));
  events.forEach((stored, i) => {
    expect(stored.producer_signature).toMatch(/^[A-Za-z0-9+/]{86}==$/);
    if (i % 10 === 3) expect(stored.timestamp).toBe('2026-03-01T10:00:00.123Z');
    else expect(Date.parse(stored.timestamp)).toBeGreaterThanOrEqual(before);
    if (i % 10 !== 3) expect(Date.parse(stored.timestamp)).toBeLessThanOrEqual(after);
    expect(stored.organization_id).toBe(i % 10 === 7 ? 'customer_7' : org.id);
  });
  const docs = await app.collections.events.find({ tenant: org.id, api_key_id: org.keyId }).toArray();
  expect(docs.length).toBe(50);
  expect(new Map(docs.map((doc) => [doc._id, doc.producer_signature]))).toEqual(new Map(events.map((e) => [e.id, e.producer_signature])));

  // verifyReceipts checks each signature with the client's producer key, besides the proofs.
  expect(await client.verifyReceipts(recorded)).toMatchObject({ verified: 50, removed: 0 });
  // And the `verify` command's rules over the exported log: the binding entry in it, every event of the key signed by its producer.
  const check = new ProducerSignatureCheck();
  for (const e of await exported(client)) await check.add(e);
  expect(check.finish(true)).toEqual({ failures: [], unchecked: 0, bound: 1 });
  expect(check.signed).toBe(50);

  // One call at a time: createEvent and createBatch sign too; a body signed once is the same body on its retry.
  const single = await client.createEvent(event(50));
  expect(single.event).toMatchObject({ producer_signature: expect.any(String), metadata: { i: 50 } });
  const body = await producer.sign(event(51));
  const first = await client.createEvent(body, { idempotencyKey: 'signed-once' });
  const again = await client.createEvent(body, { idempotencyKey: 'signed-once' });
  expect([first.replayed, again.replayed, again.event.id]).toEqual([false, true, first.event.id]);
  // Unsigned and without a timestamp, it would be signed with another time at each retry: refused before sending.
  await expect(client.createEvent(event(54), { idempotencyKey: 'unsigned-no-time' })).rejects.toThrow(/give each event its timestamp/);
  const batch = await client.createBatch([event(52), event(53, { timestamp: '2026-03-02T00:00:00Z' })]);
  expect(batch.recorded.map((r) => (r.event as StoredEvent).producer_signature)).toEqual([expect.any(String), expect.any(String)]);
  expect(await client.verifyReceipts([single, first, ...batch.recorded])).toMatchObject({ verified: 4 });
  expect(await app.collections.events.countDocuments({ tenant: org.id, api_key_id: org.keyId, producer_signature: { $exists: true } })).toBe(54);

  // A timestamp the service would refuse cannot be signed: that record() alone is refused, at once.
  const queue2 = new DeliveryQueue(client, { flushIntervalMs: 10 });
  const outcomes = await Promise.allSettled([queue2.record(event(54)), queue2.record(event(55, { timestamp: '2026-02-30T10:00:00Z' })), queue2.record(event(56))]);
  await queue2.close();
  expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(TypeError);
  expect(outcomes.flatMap((o) => (o.status === 'fulfilled' ? [(o.value.event as StoredEvent).metadata.i] : []))).toEqual([54, 56]);
}, 60_000);

test('an answer whose signature is not the one sent rejects its record(); an event of the key its producer did not sign fails verifyReceipts, named', async () => {
  const org = await app.org();
  const pair = await generateProducerKey('producer.example');
  const producer = await producerSigner(pair.privateKey, { organizationId: org.id });
  const honest = new AuditLedgerClient({ url: app.url, apiKey: org.key, producer, verify: verifyOptions(org) });
  await honest.bindProducerKey();

  // The service answers event 1 as stored with another signature (well formed): a lie about what it hashed.
  const lying = alteringFetch((path, body) => {
    if (path !== '/v1/events/batch') return undefined;
    const events = body.events as StoredEvent[];
    return { ...body, events: events.map((e) => (e.metadata.i === 1 ? { ...e, producer_signature: `${'A'.repeat(85)}Q==` } : e)) };
  });
  const queue = new DeliveryQueue(new AuditLedgerClient({ url: app.url, apiKey: org.key, fetch: lying.fetch, producer }), { flushIntervalMs: 10 });
  const outcomes = await Promise.allSettled([0, 1, 2].map((i) => queue.record(event(i))));
  await queue.close();
  expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  const reason = (outcomes[1] as PromiseRejectedResult).reason as VerificationError;
  expect(reason).toBeInstanceOf(VerificationError);
  expect(reason.failures[0]).toMatch(/^event [0-9a-f-]+: the service answered it stored with producer_signature other than sent$/);
  // One that leaves the signature out of its answer, too.
  const dropping = alteringFetch((path, body) => (path === '/v1/events/batch' ? { ...body, events: (body.events as Record<string, unknown>[]).map(({ producer_signature: _, ...e }) => e) } : undefined));
  const dropped = new DeliveryQueue(new AuditLedgerClient({ url: app.url, apiKey: org.key, fetch: dropping.fetch, producer }), { flushIntervalMs: 10 });
  const droppedOutcome = dropped.record(event(3)).then(() => null, (error: unknown) => error as VerificationError);
  await dropped.close();
  expect((await droppedOutcome)?.failures[0]).toMatch(/with producer_signature other than sent$/);

  // Someone holding the service's signing key and database stores an event of the bound key through the
  // service's own write path, unsigned: it is genuinely in the signed log, with a genuine proof.
  const genuine = (await honest.createBatch([event(10), event(11)])).recorded;
  const forgedId = await storedPastTheDoor(app, org.id, org.keyId, contentOf({ ...event(12), action: 'payout.approved' }, org.id));
  let proof: Awaited<ReturnType<AuditLedgerClient['proof']>> | null = null;
  for (let tries = 0; proof === null && tries < 120; tries++) {
    proof = await honest.proof(forgedId).catch(async () => {
      await new Promise((resolve) => setTimeout(resolve, 250));
      return null;
    });
  }
  if (!proof) throw new Error('the forged event was never in a signed checkpoint');
  const forgedReceipt: Recorded = {
    event: await honest.getEvent(forgedId),
    receipt: { seq: proof.leaf_index + 1, leaf_index: proof.leaf_index, event_sha256: proof.event_sha256, ...(proof.event_commitment === undefined ? {} : { event_commitment: proof.event_commitment }), ...(proof.salt === undefined ? {} : { salt: proof.salt }) },
  };
  // Without a producer key to check with, its proofs pass: it is in the log. With one, it is named.
  expect(await new AuditLedgerClient({ url: app.url, apiKey: org.key, verify: verifyOptions(org) }).verifyReceipts([...genuine, forgedReceipt])).toMatchObject({ verified: 3 });
  const failures = await honest.verifyReceipts([...genuine, forgedReceipt]).then(() => [], (error: unknown) => (error as VerificationError).failures);
  expect(failures).toEqual([`event ${forgedId}: it carries no producer signature, though its API key is bound to producer key ${pair.producerKey}`]);

  // Events signed by another key than the one the verifier pins: each named.
  const other = await generateProducerKey('other.example');
  const pinnedOther = new AuditLedgerClient({ url: app.url, apiKey: org.key, verify: { ...verifyOptions(org), producerKey: other.producerKey } });
  const otherFailures = await pinnedOther.verifyReceipts(genuine).then(() => [], (error: unknown) => (error as VerificationError).failures);
  expect(otherFailures).toEqual(genuine.map((r) => `event ${r.event.id}: its producer signature does not verify with producer key ${other.producerKey} (its content is not what the producer signed)`));
}, 60_000);

test('a client signing with another private key than the bound one: EVENT_SIGNATURE_INVALID, typed, and nothing stored; a producer key that is not the private key\'s is refused at once', async () => {
  const org = await app.org();
  const bound = await generateProducerKey('producer.example');
  const stranger = await generateProducerKey('producer.example');
  await new AuditLedgerClient({ url: app.url, apiKey: org.key }).bindProducerKey(bound.producerKey);
  const client = new AuditLedgerClient({ url: app.url, apiKey: org.key, producer: await producerSigner(stranger.privateKey, { organizationId: org.id }) });

  const queue = new DeliveryQueue(client, { flushIntervalMs: 10 });
  const outcomes = await Promise.allSettled([0, 1].map((i) => queue.record(event(i))));
  await queue.close();
  for (const outcome of outcomes) {
    expect(outcome.status).toBe('rejected');
    const error = (outcome as PromiseRejectedResult).reason as AuditLedgerError;
    expect(error).toBeInstanceOf(AuditLedgerError);
    expect([error.status, error.code]).toEqual([400, 'EVENT_SIGNATURE_INVALID']);
    // Each event that owes a signature is named: one, or both when they went in one batch.
    expect(error.fields.length).toBeGreaterThanOrEqual(1);
    expect(error.fields.every((field) => /^events\[\d\]\.producer_signature$/.test(field))).toBe(true);
  }
  const single = await client.createEvent(event(2)).catch((error: unknown) => error as AuditLedgerError);
  expect(single).toBeInstanceOf(AuditLedgerError);
  expect([single instanceof AuditLedgerError && single.code, single instanceof AuditLedgerError && single.fields]).toEqual(['EVENT_SIGNATURE_INVALID', ['producer_signature']]);
  expect(await app.collections.events.countDocuments({ tenant: org.id, api_key_id: org.keyId })).toBe(0);

  // Mismatched keys are caught before anything is sent, for texts and for CryptoKeys (one kept non-extractable).
  await expect(producerSigner(stranger.privateKey, { organizationId: org.id, producerKey: bound.producerKey })).rejects.toThrow('the producer key is not the private key\'s own');
  const seed = Buffer.from(bound.privateKey.split('+').slice(4).join('+'), 'base64').subarray(1);
  const cryptoKey = await crypto.subtle.importKey('pkcs8', Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), { name: 'Ed25519' }, false, ['sign']);
  await expect(producerSigner(cryptoKey, { organizationId: org.id, producerKey: stranger.producerKey })).rejects.toThrow('the producer key is not the private key\'s own');
  await expect(producerSigner(cryptoKey, { organizationId: org.id })).rejects.toThrow('a CryptoKey needs options.producerKey');
  await expect(producerSigner(bound.privateKey.replace(/\+[0-9a-f]{8}\+/, '+00000000+'), { organizationId: org.id })).rejects.toThrow('the private key does not match its key id');
  await expect(generateProducerKey('has space')).rejects.toThrow(TypeError);
  // The CryptoKey of the bound key signs what the service takes.
  const fromCryptoKey = new AuditLedgerClient({ url: app.url, apiKey: org.key, producer: await producerSigner(cryptoKey, { organizationId: org.id, producerKey: bound.producerKey }) });
  expect((await fromCryptoKey.createEvent(event(3))).event).toMatchObject({ producer_signature: expect.any(String) });
});
