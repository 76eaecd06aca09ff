/**
 * The upgrade to sealed rows (src/ledger/legacyRows.ts): events and tombstones stored by a version before
 * MACs are sealed at start-up only where a checkpoint this key signed covers them and they reproduce it;
 * rows past the newest signed checkpoint are never trusted as they are: the start is refused, naming them,
 * until the operator adopts them (`ledger reseal --adopt`) or sets them aside (`--set-aside`). Once an
 * installation is marked sealed, a row without a MAC is foreign, never an earlier version's.
 */
import { MongoClient } from 'mongodb';
import { collections, type Collections } from '../../src/db/database';
import type { EventDoc } from '../../src/db/documents';
import { isOwnStored } from '../../src/db/rowMacs';
import { RowMac } from '../../src/domain/ledger/rowMac';
import { call, eventBody } from '../helpers/api';
import { mongoUri, startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg, uniqueDbName } from '../helpers/harness';
import { runCli, testLedgerKeyFile } from '../helpers/processes';

const dbName = uniqueDbName('rowupgrade');
const rowMac = RowMac.fromSigner(TEST_LEDGER_SIGNER);
let cliEnv: Record<string, string>;
/** A connection of the test's own, as an operator's (or an earlier version's) would be. */
let client: MongoClient;
let c: Collections;
beforeAll(async () => {
  cliEnv = { MONGODB_DB: dbName, LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile(), LEDGER_NAME: TEST_LEDGER_SIGNER.name };
  client = await MongoClient.connect(mongoUri());
  c = collections(client.db(dbName));
});
afterAll(async () => {
  await client.db(dbName).dropDatabase();
  await client.close();
});

const start = () => startTestApp({ label: 'rowupgrade', sharedDbName: dbName });

async function writeSigned(app: TestApp, org: TestOrg, count: number): Promise<string[]> {
  const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: count }, (_, i) => eventBody({ actor: { id: `u${i}` } })) } });
  expect(res.status).toBe(201);
  const ids = (res.body.events as { id: string }[]).map((e) => e.id);
  expect((await call(`${app.url}/v1/events/${ids.at(-1) as string}/proof`, { key: org.key })).status).toBe(200);
  return ids;
}

/** What an earlier version left: rows without a MAC, and no mark that every row was sealed. */
async function asBeforeMacs(tenant: string): Promise<void> {
  await c.eventSlots.updateMany({ tenant }, { $unset: { mac: '' } });
  await c.installationState.deleteMany({});
}

const sealed = async (tenant: string) => (await c.eventSlots.find({ tenant }).sort({ seq: 1 }).toArray()).map((doc) => isOwnStored(rowMac, doc));

test('rows a signed checkpoint covers are sealed at start-up; the log goes on, and the audit is clean', async () => {
  let app = await start();
  const org = await app.org();
  const ids = await writeSigned(app, org, 12);
  await app.close();
  await asBeforeMacs(org.id);
  expect(await sealed(org.id)).toEqual(Array(12).fill(false));

  app = await start();
  try {
    expect(await sealed(org.id)).toEqual(Array(12).fill(true));
    expect(await c.installationState.findOne({ _id: 'row_macs' })).not.toBeNull();
    // Served as before: read, proved, and the log goes on.
    expect((await call(`${app.url}/v1/events/${ids[3] as string}`, { key: org.key })).status).toBe(200);
    await writeSigned(app, org, 2);
    const audited = await runCli(['ledger', 'audit', '--org', org.id, '--json'], cliEnv);
    expect(audited.code).toBe(0);
  } finally {
    await app.close();
  }
});

test('a row past the newest signed checkpoint refuses the start, naming it; --adopt seals it as it is, and the service starts', async () => {
  let app = await start();
  const org = await app.org();
  await writeSigned(app, org, 5);
  await app.close();
  // An earlier version's event, stored just before a crash, never signed.
  const newest = (await c.events.find({ tenant: org.id }).sort({ seq: -1 }).limit(1).toArray())[0] as EventDoc;
  const { mac: _mac, ...rest } = newest;
  await c.events.insertOne({ ...rest, _id: `${newest._id.slice(0, -4)}beef`, seq: newest.seq + 1, month_seq: newest.month_seq + 1 });
  await asBeforeMacs(org.id);

  await expect(start()).rejects.toThrow(new RegExp(`Rows without a MAC that no signed checkpoint covers were found in ${org.id} \\(from sequence number 6; newest signed checkpoint 5\\): written by an earlier version just before it stopped, or into the database by someone else`));
  // Nothing was marked: the next start looks again.
  expect(await c.installationState.findOne({ _id: 'row_macs' })).toBeNull();
  // The covered rows were sealed meanwhile; the row past the checkpoint was not.
  expect(await sealed(org.id)).toEqual([true, true, true, true, true, false]);

  const adopted = await runCli(['ledger', 'reseal', '--org', org.id, '--adopt', '--json'], cliEnv);
  expect(adopted.code).toBe(0);
  expect(JSON.parse(adopted.stdout)).toMatchObject({ anchor: 5, size: 6, adopted: 1 });
  app = await start();
  try {
    expect(await sealed(org.id)).toEqual(Array(6).fill(true));
    const ids = await writeSigned(app, org, 1);
    expect((await call(`${app.url}/v1/events/${ids[0] as string}/proof`, { key: org.key })).body.leaf_index).toBe(6);
  } finally {
    await app.close();
  }
});

test.each([
  ['the mark in place', false],
  ['the mark deleted too (it cannot be told from an upgrade by the mark alone: rows sealed before say it is none)', true],
])('once sealed, a row without a MAC is foreign (%s): no start is refused for it, and it is never served', async (_name, deleteMark) => {
  let app = await start();
  const org = await app.org();
  await writeSigned(app, org, 3);
  await app.close();
  const newest = (await c.events.find({ tenant: org.id }).sort({ seq: -1 }).limit(1).toArray())[0] as EventDoc;
  const { mac: _mac, ...rest } = newest;
  const planted = `${newest._id.slice(0, -4)}f00d`;
  await c.events.insertOne({ ...rest, _id: planted, seq: newest.seq + 1 });
  expect(await c.installationState.findOne({ _id: 'row_macs' })).not.toBeNull();
  if (deleteMark) await c.installationState.deleteMany({});

  app = await start();
  try {
    expect((await call(`${app.url}/v1/events/${planted}`, { key: org.key })).status).toBe(404);
    const ids = await writeSigned(app, org, 1);
    expect((await call(`${app.url}/v1/events/${ids[0] as string}/proof`, { key: org.key })).body.leaf_index).toBe(3);
    expect(await c.foreignRows.countDocuments({ 'row._id': planted })).toBe(1);
  } finally {
    await app.close();
  }
});
