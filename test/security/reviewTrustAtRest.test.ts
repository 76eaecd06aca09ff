/**
 * Review of "Trust at rest" (issue 35): attacks by someone who can write the database, not read the key
 * file. Each test asserts what the issue/README promise; a failing test is a finding.
 */
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { v7 as uuidv7 } from 'uuid';
import { collections, type Collections } from '../../src/db/database';
import type { EventDoc } from '../../src/db/documents';
import { InstallationStore } from '../../src/db/installationStore';
import { assertKeyFitsLedger } from '../../src/ledger/keyFit';
import { RETENTION_ACTIONS } from '../../src/domain/retention';
import { call, eventBody } from '../helpers/api';
import { importVerifier, verifyEventInclusion } from '../../src/domain/ledger/webVerify';
import { mongoUri, startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg, uniqueDbName } from '../helpers/harness';
import { runCli, testLedgerKeyFile } from '../helpers/processes';

const DAY_MS = 86_400_000;
let attacker: MongoClient;
const shared: string[] = [];
beforeAll(async () => { attacker = await MongoClient.connect(mongoUri()); });
afterAll(async () => {
  for (const name of shared) await attacker.db(name).dropDatabase().catch(() => undefined);
  await attacker.close();
});

async function writeSigned(app: TestApp, org: TestOrg, count: number, label = 'g'): Promise<string[]> {
  const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: count }, (_, i) => eventBody({ actor: { id: `${label}${i}` } })) } });
  expect(res.status).toBe(201);
  const ids = (res.body.events as { id: string }[]).map((e) => e.id);
  expect((await call(`${app.url}/v1/events/${ids.at(-1)}/proof`, { key: org.key })).status).toBe(200);
  return ids;
}
async function newestRow(c: Collections, tenant: string): Promise<EventDoc> {
  const [doc] = await c.events.find({ tenant }).sort({ seq: -1 }).limit(1).toArray();
  return doc as EventDoc;
}
function forgedFrom(template: EventDoc, seq: number): EventDoc {
  const { mac: _m, ...shape } = template;
  return { ...shape, _id: uuidv7(), seq, salt: randomBytes(32).toString('hex'), actor_id: 'mallory' };
}
const checkpointSize = async (app: TestApp, org: TestOrg) => (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body.tree_size as number;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('A. 101 foreign rows at the next numbers: the organization keeps being signed (README: a foreign row never stalls an organization)', async () => {
  const app = await startTestApp({ label: 'rv101' });
  const c = collections(attacker.db(app.dbName));
  try {
    const org = await app.org();
    await writeSigned(app, org, 3);
    const t = await newestRow(c, org.id);
    await c.events.insertMany(Array.from({ length: 101 }, (_, i) => forgedFrom(t, t.seq + 1 + i)));
    const res = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ actor: { id: 'genuine' } }) });
    expect(res.status).toBe(201);
    const id = res.body.event.id as string;
    const stored = await c.events.findOne({ _id: id });
    const proof = await call(`${app.url}/v1/events/${id}/proof`, { key: org.key });
    await sleep(1500);
    const halted = app.services.integrator.stats.halted;
    // Report what happened before asserting.
    console.log(JSON.stringify({ leaf: res.body.ledger?.leaf_index, storedSeq: stored?.seq, signedWas: t.seq, proof: [proof.status, proof.text.slice(0, 300)], checkpoint: await checkpointSize(app, org), halted, leftAtNext: (await c.events.findOne({ tenant: org.id, seq: t.seq + 1 }))?.actor_id }));
    expect(stored?.seq).toBe(t.seq + 1);
    expect(proof.status).toBe(200);
    expect(halted).toBe(0);
  } finally {
    await app.close();
  }
}, 120_000);

test('B. a database writer backdates a signed event\'s received_at: the service itself prunes it under its policy (received_at is in neither the leaf nor the MAC)', async () => {
  let now = Date.UTC(2026, 0, 5, 12);
  const app = await startTestApp({ label: 'rvprune', clock: { now: () => new Date(now) }, env: { RETENTION_PRUNE_INTERVAL_MS: '0' } });
  const c = collections(attacker.db(app.dbName));
  try {
    const org = await app.org();
    // A genuine 30-day policy, as the owner would set it (the service's own record), effective after notice.
    await app.services.selfAudit.record(org.id, { type: 'service', job: 'retention' } as never, RETENTION_ACTIONS.policyChanged, { type: 'retention_policy', id: org.id }, { days: 30, previous_days: null, effective_at: new Date(now + 7 * DAY_MS).toISOString(), notice_days: 7 });
    now += 10 * DAY_MS;
    const ids = await writeSigned(app, org, 5);
    const victim = ids[2] as string;
    // The attacker: one field, on a signed event with a valid MAC.
    await c.events.updateOne({ _id: victim }, { $set: { received_at: new Date(now - 365 * DAY_MS) } });
    const pruned = await app.services.retention.prune(org.id);
    const get = await call(`${app.url}/v1/events/${victim}`, { key: org.key });
    await app.services.integrator.integrate(org.id, { storedTo: await c.events.countDocuments({ tenant: org.id }) });
    const audit = await runCli(['ledger', 'audit', '--org', org.id, '--verifier-key', TEST_LEDGER_SIGNER.text, '--json'], {
      MONGODB_DB: app.dbName, LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile(), LEDGER_NAME: TEST_LEDGER_SIGNER.name,
    });
    console.log(JSON.stringify({ pruned, get: get.status, audit: audit.code, findings: audit.stdout.slice(0, 600) }));
    expect(pruned.pruned).toBe(0);
    expect(get.status).toBe(200);
  } finally {
    await app.close();
  }
}, 120_000);

test('C. marker deleted + one unsealed row past the signed head: the next start is refused, and the message calls the forgery an earlier version\'s row and offers --adopt', async () => {
  const dbName = uniqueDbName('rvmarker');
  shared.push(dbName);
  let app = await startTestApp({ label: 'rvmarker', sharedDbName: dbName });
  const c = collections(attacker.db(dbName));
  const org = await app.org();
  await writeSigned(app, org, 3);
  await app.close();
  await c.installationState.deleteMany({});
  const t = await newestRow(c, org.id);
  await c.events.insertOne(forgedFrom(t, t.seq + 1));
  let refused: string | null = null;
  try {
    app = await startTestApp({ label: 'rvmarker', sharedDbName: dbName });
    await app.close();
  } catch (error) {
    refused = (error as Error).message;
  }
  console.log(refused);
  expect(refused).toBeNull();
}, 120_000);

test('D. two signed checkpoints edited in place: the whole installation is refused as "the wrong key" (same name and key id shown), pointing at new-installation', async () => {
  const dbName = uniqueDbName('rvkeyfit');
  shared.push(dbName);
  const app = await startTestApp({ label: 'rvkeyfit', sharedDbName: dbName });
  const db = attacker.db(dbName);
  const c = collections(db);
  const org = await app.org();
  await writeSigned(app, org, 3);
  await sleep(1000);
  await app.close();
  const store = new InstallationStore(db);
  for (let i = 0; i < 5; i++) {
    for (const doc of await store.sampleCheckpoints('installation')) {
      // Break the signature (last base64 chars) but keep the signature line's name and key id.
      const note = doc.note.replace(/(.{6})\n$/, (_m, tail: string) => `${tail.split('').reverse().join('') === tail ? 'AAAAAA' : tail.split('').reverse().join('')}\n`);
      await c.ledgerCheckpoints.updateOne({ _id: doc._id }, { $set: { note } });
    }
  }
  let refused: string | null = null;
  try {
    await assertKeyFitsLedger(store, TEST_LEDGER_SIGNER, { keyFile: testLedgerKeyFile(), dataDir: '/tmp/x', mongodbUri: mongoUri() });
  } catch (error) {
    refused = (error as Error).message;
  }
  console.log(refused);
  expect(refused).toBeNull();
}, 120_000);

test('E. ledger_heads lowered (unauthenticated) + signed events deleted + a squatter: a signed number is given again to a new, acknowledged event', async () => {
  const app = await startTestApp({ label: 'rvhead' });
  const c = collections(attacker.db(app.dbName));
  try {
    const org = await app.org();
    await writeSigned(app, org, 10);
    const t = await newestRow(c, org.id);
    const signed = await checkpointSize(app, org);
    await c.ledgerHeads.updateOne({ _id: org.id }, { $set: { size: 3 } });
    await c.events.deleteMany({ tenant: org.id, seq: { $gt: 3 } });
    await c.events.insertOne(forgedFrom(t, t.seq + 1));
    const res = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ actor: { id: 'genuine' } }) });
    const stored = await c.events.findOne({ _id: res.body.event?.id });
    await sleep(1500);
    const proof = await call(`${app.url}/v1/events/${res.body.event?.id}/proof`, { key: org.key });
    const ev = await call(`${app.url}/v1/events/${res.body.event?.id}`, { key: org.key });
    const check = proof.status === 200 ? await verifyEventInclusion(ev.body.event ?? ev.body, proof.body, await importVerifier(TEST_LEDGER_SIGNER.text)) : null;
    console.log(JSON.stringify({ failures: check?.failures }));
    console.log(JSON.stringify({ signed, status: res.status, leaf: res.body.ledger?.leaf_index, storedSeq: stored?.seq, proof: [proof.status, proof.text.slice(0, 200)] }));
    expect(stored?.seq).toBeGreaterThan(signed);
  } finally {
    await app.close();
  }
}, 120_000);
