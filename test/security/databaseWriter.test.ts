/**
 * Attacks by someone who can write the database but not read the key file, found by the review of
 * "trust at rest" (each failed before its fix): a long run of foreign rows, a time of receipt set back to
 * have the service prune a signed event, a deleted hold, a deleted mark of the upgrade, checkpoints
 * edited in place, and the unauthenticated head lowered to have a signed number given again.
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
import { importVerifier, verifyEventInclusion } from '../../src/client/webVerify';
import { mongoUri, startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg, uniqueDbName } from '../helpers/harness';
import { runCli, testLedgerKeyFile } from '../helpers/processes';
import { eventually, quietFor } from '../helpers/waiting';
import { INSTALLATION } from '../../src/domain/ledger/log';

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

test('A. 101 foreign rows at the next numbers: the organization keeps being signed (a foreign row never stalls an organization)', async () => {
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
    // The integrator counts only rounds that sign or are asked for: no count tells an idle round passed.
    await quietFor(1500, 'several ledger rounds (200 ms here) that would meet the foreign rows and halt, had they stalled the organization');
    const halted = app.services.integrator.stats.halted;
    expect(stored?.seq).toBe(t.seq + 1);
    expect(proof.status).toBe(200);
    expect(halted).toBe(0);
  } finally {
    await app.close();
  }
}, 120_000);

test('B. a signed event\'s time of receipt set back: the service does not prune it (received_at is under the MAC)', async () => {
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
    expect(pruned.pruned).toBe(0);
    // Changed behind the service's back, it is foreign now: not served, and named by the audit.
    expect(get.status).toBe(404);
    expect(audit.stdout).toContain('"kind":"foreign"');
  } finally {
    await app.close();
  }
}, 120_000);

test('C. the upgrade\'s mark deleted and an unsealed row planted past the signed head: the start goes on (the organization was sealed before: no upgrade), the row is foreign', async () => {
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
  expect(refused).toBeNull();
}, 120_000);

test('D. signed checkpoints edited in place (this key named, the signature broken): the start is not refused as "the wrong key"', async () => {
  const dbName = uniqueDbName('rvkeyfit');
  shared.push(dbName);
  const app = await startTestApp({ label: 'rvkeyfit', sharedDbName: dbName });
  const db = attacker.db(dbName);
  const c = collections(db);
  const org = await app.org();
  await writeSigned(app, org, 3);
  // The organization's newest checkpoint rolled up and signed into the installation log, whose checkpoints are edited below.
  await eventually('the installation log to cover the organization\'s checkpoint', async () => {
    const [newest] = await c.ledgerCheckpoints.find({ tenant: org.id }).sort({ size: -1 }).limit(1).toArray();
    const entry = newest && (await c.ledgerEntries.findOne({ checkpoint: newest._id }));
    const head = await c.ledgerHeads.findOne({ _id: INSTALLATION });
    return !!entry && !!head && head.size > entry._id;
  }, 20_000, 50);
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
  expect(refused).toBeNull();
}, 120_000);

test('E. the head lowered, signed events deleted and a squatter planted: no signed number is given again', async () => {
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
    await quietFor(1500, 'several ledger rounds (200 ms here) that would sign a number again over the lowered head, were that possible');
    const proof = await call(`${app.url}/v1/events/${res.body.event?.id}/proof`, { key: org.key });
    const ev = await call(`${app.url}/v1/events/${res.body.event?.id}`, { key: org.key });
    const check = proof.status === 200 ? await verifyEventInclusion(ev.body.event ?? ev.body, proof.body, await importVerifier(TEST_LEDGER_SIGNER.text)) : null;
    expect(stored?.seq).toBeGreaterThan(signed);
    expect([proof.status, check?.failures]).toEqual([200, []]);
  } finally {
    await app.close();
  }
}, 120_000);

test('F. a legal hold deleted from its collection behind the service\'s back still holds: the log says it is in force', async () => {
  let now = Date.UTC(2026, 0, 5, 12);
  const app = await startTestApp({ label: 'rvhold', clock: { now: () => new Date(now) }, env: { RETENTION_PRUNE_INTERVAL_MS: '0' } });
  const c = collections(attacker.db(app.dbName));
  try {
    const org = await app.org();
    await app.services.selfAudit.record(org.id, { type: 'service', job: 'retention' } as never, RETENTION_ACTIONS.policyChanged, { type: 'retention_policy', id: org.id }, { days: 30, previous_days: null, effective_at: new Date(now + 7 * DAY_MS).toISOString(), notice_days: 7 });
    const kept = await writeSigned(app, org, 3, 'kept');
    const gone = await writeSigned(app, org, 3, 'gone');
    const owner = { kind: 'session', tenant: org.id, accountId: 'acct_owner', email: 'owner@example.com', role: 'owner' } as never;
    await app.services.retention.placeHold(owner, { actor_id: 'kept0' }, 'investigation');
    // The attacker deletes the hold's document; the log's hold_placed entry stays.
    await c.retentionHolds.deleteMany({ org_id: org.id });
    now += 60 * DAY_MS;
    const pruned = await app.services.retention.prune(org.id);
    expect(pruned.held).toBe(1);
    expect((await call(`${app.url}/v1/events/${kept[0] as string}`, { key: org.key })).status).toBe(200);
    expect((await call(`${app.url}/v1/events/${gone[0] as string}`, { key: org.key })).status).toBe(404);
  } finally {
    await app.close();
  }
}, 120_000);
