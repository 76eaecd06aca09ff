/**
 * Retention keeps the service's other promises (issue 34): a removed event leaves its tombstone, so its
 * sequence number is never given again (across restarts too), readers see one gapless sequence (exports,
 * a stream's lag and start), a replayed Idempotency-Key answers removed events as removed and stores
 * nothing, the service's action namespace is its own, and an erasure on one instance is never followed
 * by another instance sending the erased events from its memory.
 */
import { MongoClient } from 'mongodb';
import { leafCommitOfDoc, LIVE } from '../../src/db/documents';
import { eventMac } from '../../src/db/rowMacs';
import { RowMac } from '../../src/domain/ledger/rowMac';
import { RETENTION_ACTIONS } from '../../src/domain/retention';
import { SELF_AUDIT_KEY_ID } from '../../src/domain/selfAudit';
import { call, eventBody, eventually, sentEvents } from '../helpers/api';
import { mongoUri, startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg, uniqueDbName } from '../helpers/harness';
import { runCli } from '../helpers/processes';
import { webhookItems, webhookReceiver } from '../helpers/streamReceivers';
import { uniqueEmail, WebSession } from '../helpers/webSession';

const dbName = uniqueDbName('removed');
const apps: TestApp[] = [];
/** An instance on the test's database; closing it keeps the data (a restart is a new one on the same). */
async function instance(deliverStreams = true, env: Record<string, string> = {}): Promise<TestApp> {
  const app = await startTestApp({ label: 'removed', sharedDbName: dbName, env: { RETENTION_PRUNE_INTERVAL_MS: '0', ...env }, deliverStreams });
  apps.push(app);
  return app;
}
async function closed(app: TestApp): Promise<void> {
  apps.splice(apps.indexOf(app), 1);
  await app.close();
}
// Each test's instances stop with it: a stream is delivered by the instances the test means.
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});
afterAll(async () => {
  const client = await new MongoClient(mongoUri()).connect();
  await client.db(dbName).dropDatabase();
  await client.close();
});

/** An organization owned by a signed-in account, and an API key. */
async function ownedOrg(app: TestApp): Promise<{ owner: WebSession; org: TestOrg }> {
  const owner = new WebSession(app.url);
  await owner.signup(uniqueEmail('owner'), 'correct horse battery staple', 'Removed');
  const me = await owner.client.account.me.query();
  const id = (me as { organization: { id: string } }).organization.id;
  const key = await app.key(id);
  return { owner, org: { id, key: key.key, keyId: key.keyId } };
}

async function batch(app: TestApp, org: TestOrg, actors: string[], idempotencyKey?: string) {
  const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: actors.map((id) => eventBody({ actor: { id, email: `${id}@example.com` } })) }, headers: idempotencyKey ? { 'idempotency-key': idempotencyKey } : {} });
  expect(res.status).toBe(201);
  return res;
}

/** Every sequence number of the organization, event or tombstone, with the id it holds. */
async function slots(app: TestApp, org: TestOrg): Promise<Map<number, string>> {
  const docs = await app.collections.eventSlots.find({ tenant: org.id }, { projection: { seq: 1 } }).toArray();
  return new Map(docs.map((doc) => [doc.seq, doc._id]));
}

test('an erased event\'s number is never given again, across a restart', async () => {
  let app = await instance();
  const { owner, org } = await ownedOrg(app);
  // The victim's events come early (the case: sequence number 2 removed), then many others.
  await batch(app, org, ['early', 'victim', 'victim', ...Array.from({ length: 17 }, (_, i) => `u${i}`)]);
  const before = await slots(app, org);
  const erased = await owner.client.dashboard.retention.erase.mutate({ actor_id: 'victim', reason: 'data_subject_request' });
  expect(erased).toMatchObject({ erased: 2, held: 0 });

  // A plain restart: the newest-event search starts from nothing.
  await closed(app);
  app = await instance();
  const after = await batch(app, org, ['n1', 'n2']);
  const all = await slots(app, org);
  const newest = Math.max(...before.keys());
  // Gapless, every earlier number still holds its id, and the new events took numbers never given before.
  expect([...all.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: all.size }, (_, i) => i + 1));
  for (const [seq, id] of before) expect(all.get(seq)).toBe(id);
  for (const receipt of after.body.ledger as { leaf_index: number }[]) expect(receipt.leaf_index + 1).toBeGreaterThan(newest);
}, 120_000);

test('after erasing sequence number 2, the list, the export, a stream\'s lag and a new stream\'s start see every number after it', async () => {
  const app = await instance();
  const { owner, org } = await ownedOrg(app);
  await batch(app, org, Array.from({ length: 46 }, (_, i) => `u${i}`));
  // The event at sequence number 2 (whichever it is: the sign-up's records come first) is erased.
  const victim = (await slots(app, org)).get(2) as string;
  await owner.client.dashboard.retention.erase.mutate({ event_ids: [victim], reason: 'data_subject_request' });
  const all = await slots(app, org);
  // The list and the export hold every stored event (the export once stopped at the first removed number).
  const live = await app.collections.events.countDocuments({ tenant: org.id, ...LIVE });
  const listed = await call(`${app.url}/v1/events?limit=200`, { key: org.key });
  expect(listed.body.data).toHaveLength(live);
  await eventually('the log signed up to the newest event', async () => (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body.tree_size === all.size);
  const exported = await call(`${app.url}/v1/events/export?format=json`, { key: org.key });
  expect(exported.status).toBe(200);
  expect(exported.body).toHaveLength(live);
  expect((exported.body as { id: string }[]).some((event) => event.id === victim)).toBe(false);

  // A stream "from the next event" starts after the newest number, not at the removed one; its lag counts from there.
  const given = (await slots(app, org)).size; // the export's own record took one more
  const created = await call(`${app.url}/v1/streams`, { key: org.key, body: { name: 'next', destination: { type: 'webhook', url: 'http://127.0.0.1:9/never' } } });
  expect(created.status).toBe(201);
  expect(created.body.start_seq).toBe(given + 1);
  await batch(app, org, ['later']);
  const state = await call(`${app.url}/v1/streams/${created.body.id as string}`, { key: org.key });
  expect(state.body.lag_events).toBeGreaterThanOrEqual(1);
}, 120_000);

test('an Idempotency-Key replayed after its events were erased answers them as removed and stores nothing', async () => {
  const app = await instance();
  const { owner, org } = await ownedOrg(app);
  const first = await batch(app, org, ['subject', 'subject', 'other'], 'replay-after-erasure');
  const ids = (first.body.events as { id: string }[]).map((event) => event.id);
  await owner.client.dashboard.retention.erase.mutate({ actor_id: 'subject', reason: 'data_subject_request' });
  const storedBefore = await slots(app, org);

  const again = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: ['subject', 'subject', 'other'].map((id) => eventBody({ actor: { id, email: `${id}@example.com` } })) }, headers: { 'idempotency-key': 'replay-after-erasure' } });
  expect(again.status).toBe(201);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  // The same ids; the erased two marked removed (by the erasure's entry), with none of their content.
  expect((again.body.events as { id: string }[]).map((event) => event.id)).toEqual(ids);
  const entry = (await app.collections.events.findOne({ tenant: org.id, action: RETENTION_ACTIONS.erased, api_key_id: SELF_AUDIT_KEY_ID }))?.seq;
  expect(again.body.events.slice(0, 2)).toEqual([0, 1].map((i) => ({ id: ids[i], removed: 'erased', removed_by: entry })));
  expect(again.body.ledger.slice(0, 2)).toEqual([0, 1].map((i) => ({ seq: (first.body.ledger[i] as { seq: number }).seq, leaf_index: (first.body.ledger[i] as { leaf_index: number }).leaf_index, removed: true })));
  expect(again.body.events[2]).toMatchObject({ id: ids[2], actor_id: 'other' });
  expect(again.text).not.toContain('subject@example.com');
  // Nothing stored: the same numbers, the same ids.
  expect(await slots(app, org)).toEqual(storedBefore);

  // A single event too.
  const one = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ actor: { id: 'subject' } }), headers: { 'idempotency-key': 'single-replay' } });
  await owner.client.dashboard.retention.erase.mutate({ event_ids: [one.body.event.id as string], reason: 'data_subject_request' });
  const oneAgain = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ actor: { id: 'subject' } }), headers: { 'idempotency-key': 'single-replay' } });
  expect(oneAgain.status).toBe(201);
  expect(oneAgain.headers.get('idempotent-replayed')).toBe('true');
  expect(oneAgain.body.event).toEqual({ id: one.body.event.id, removed: 'erased', removed_by: expect.any(Number) });
}, 120_000);

test('the service\'s action namespace is its own: clients cannot send it, and client events stored with it before are erasable', async () => {
  const app = await instance();
  const { owner, org } = await ownedOrg(app);
  const refused = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ action: 'audit_ledger.retention.erased' }) });
  expect(refused.status).toBe(400);
  expect(refused.body.message).toContain('action must not start with "audit_ledger."');
  const refusedBatch = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: [eventBody(), eventBody({ action: 'Audit_Ledger.member.invited' })] } });
  expect(refusedBatch.status).toBe(400);
  expect(refusedBatch.body.fields).toEqual(['events[1].action']);

  // Stored by a client before the namespace was reserved (written here as an older version did, sealed
  // with the installation's row key as the service seals what it stores).
  await batch(app, org, ['ghost', 'ghost']);
  for (const doc of await app.collections.events.find({ tenant: org.id, actor_id: 'ghost' }).toArray()) {
    const older = { ...doc, action: RETENTION_ACTIONS.erased };
    await app.collections.events.updateOne({ tenant: org.id, _id: doc._id }, { $set: { action: older.action, mac: eventMac(RowMac.fromSigner(TEST_LEDGER_SIGNER), older, leafCommitOfDoc(older)) } });
  }
  const erased = await owner.client.dashboard.retention.erase.mutate({ actor_id: 'ghost', reason: 'data_subject_request' });
  expect(erased).toMatchObject({ erased: 2, held: 0 });
  expect(await app.collections.events.countDocuments({ tenant: org.id, actor_id: 'ghost' })).toBe(0);
}, 120_000);

test('an erasure on one instance: the instance delivering a stream never sends the erased events from its memory afterwards', async () => {
  // Two instances on one database; only the first delivers streams (a test app does not join the
  // instance list, so each would deliver every stream). The destination refuses at first, so the
  // delivering instance holds a batch of the events, ready to retry, and the events in memory; the other
  // instance erases. Retries come at most 200 ms apart.
  const delivering = await instance(true, { STREAM_MAX_BACKOFF_MS: '200' });
  const erasing = await instance(false);
  const { owner, org } = await ownedOrg(erasing);
  // Written first and signed, so that the stream's first batch, retried as it is, holds them.
  await batch(delivering, org, ['keep', 'forget-me', 'keep']);
  const size = (await slots(delivering, org)).size;
  await eventually('the log signed up to the newest event', async () => (await call(`${delivering.url}/v1/ledger/checkpoint`, { key: org.key })).body.tree_size >= size);
  let secret = '';
  const receiver = await webhookReceiver(() => secret).start();
  receiver.mode = { kind: 'status', status: 503, retryAfter: '0' };
  const created = await call(`${delivering.url}/v1/streams`, { key: org.key, body: { name: 'memory', destination: { type: 'webhook', url: receiver.url }, start_seq: 1 } });
  expect(created.status).toBe(201);
  secret = created.body.signing_secret as string;
  await eventually('the delivering instance tried to send them', () => Promise.resolve(receiver.refused.some((r) => r.body.includes('forget-me'))));

  await owner.client.dashboard.retention.erase.mutate({ actor_id: 'forget-me', reason: 'data_subject_request' });
  receiver.mode = { kind: 'ok' };
  await eventually('the stream caught up past the erasure', () => Promise.resolve(sentEvents(webhookItems(receiver).map((item: { event: { action: string } }) => item.event)).length >= 2));
  expect(JSON.stringify(receiver.accepted.map((r) => r.body))).not.toContain('forget-me');
  await receiver.stop();

  // A stream created after the erasure, from the first event, on the instance that holds the events in
  // memory (written there less than a minute ago, its first look at the organization's removal mark).
  let secondSecret = '';
  const second = await webhookReceiver(() => secondSecret).start();
  const again = await call(`${delivering.url}/v1/streams`, { key: org.key, body: { name: 'after', destination: { type: 'webhook', url: second.url }, start_seq: 1 } });
  expect(again.status).toBe(201);
  secondSecret = again.body.signing_secret as string;
  await eventually('the new stream delivered the kept events', () => Promise.resolve(sentEvents(webhookItems(second).map((item: { event: { action: string } }) => item.event)).length >= 2));
  expect(JSON.stringify(second.accepted.map((r) => r.body))).not.toContain('forget-me');
  await second.stop();
}, 120_000);

test('leaves kept apart by an earlier version become tombstones at start-up, and the log still audits clean', async () => {
  let app = await instance();
  const { owner, org } = await ownedOrg(app);
  await batch(app, org, ['a', 'gone', 'b', 'gone', 'c'], 'legacy-key');
  await owner.client.dashboard.retention.erase.mutate({ actor_id: 'gone', reason: 'data_subject_request' });
  // The state an earlier version left: each removed event's leaf in `kept_leaves`, and nothing at its number.
  const tombstones = await app.collections.eventSlots.find({ tenant: org.id, removed: { $exists: true } }).sort({ seq: 1 }).toArray();
  expect(tombstones).toHaveLength(2);
  for (const tombstone of tombstones) {
    if (!('leaf' in tombstone)) throw new Error('not a tombstone');
    await app.collections.legacyKeptLeaves.insertOne({ tenant: org.id, seq: tombstone.seq, v: tombstone.leaf_v, hash: tombstone.leaf });
    await app.collections.eventSlots.deleteOne({ tenant: org.id, _id: tombstone._id });
  }

  await closed(app);
  app = await instance();
  const migrated = await app.collections.eventSlots.find({ tenant: org.id, removed: { $exists: true } }).sort({ seq: 1 }).toArray();
  expect(migrated.map((doc) => ({ id: doc._id, seq: doc.seq, removed: 'removed' in doc ? doc.removed : null }))).toEqual(
    tombstones.map((doc) => ({ id: `kept:${org.id}:${doc.seq}`, seq: doc.seq, removed: 'erased' })),
  );
  expect(migrated.map((doc) => ('removed_by' in doc ? doc.removed_by : null))).toEqual(tombstones.map((doc) => ('removed_by' in doc ? doc.removed_by : null)));
  expect(await app.collections.legacyKeptLeaves.countDocuments({})).toBe(0);
  const all = await slots(app, org);
  expect([...all.keys()].sort((x, y) => x - y)).toEqual(Array.from({ length: all.size }, (_, i) => i + 1));

  // Those leaves kept no event ids: a replay of a request some of whose events are gone cannot tell a
  // removed event from one never written, and is refused rather than store erased data again.
  const replay = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: ['a', 'gone', 'b', 'gone', 'c'].map((id) => eventBody({ actor: { id, email: `${id}@example.com` } })) }, headers: { 'idempotency-key': 'legacy-key' } });
  expect(replay.status).toBe(409);
  expect(replay.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_UNVERIFIABLE', fields: ['Idempotency-Key'] });
  expect(await slots(app, org)).toEqual(all);

  const audit = await runCli(['ledger', 'audit', '--org', org.id, '--verifier-key', TEST_LEDGER_SIGNER.text, '--json'], { MONGODB_URI: mongoUri(), MONGODB_DB: dbName });
  const report = (JSON.parse(audit.stdout) as { reports: { removed: { erased: number }; findings: unknown[] }[] }).reports[0];
  expect(report).toMatchObject({ removed: { erased: 2 }, findings: [] });
  expect(audit.code).toBe(0);
}, 120_000);
