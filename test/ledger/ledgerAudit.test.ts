/**
 * `cli ledger audit`: direct database edits of each kind (an event edited, deleted, inserted, moved, a
 * tile or a checkpoint changed) are found and named; an untouched log passes.
 */
import { Binary } from 'mongodb';
import { v7 as uuidv7 } from 'uuid';
import { call, eventBody } from '../helpers/api';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from '../helpers/harness';
import { runCli } from '../helpers/processes';

let app: TestApp;
let env: Record<string, string>;

beforeAll(async () => {
  app = await startTestApp({ label: 'audit' });
  env = { MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName };
});
afterAll(() => app.close());

/** An organization with 12 events, all in a signed checkpoint. */
async function signedOrg(): Promise<{ org: TestOrg; ids: string[] }> {
  const org = await app.org();
  const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: 12 }, (_, i) => eventBody({ actor: { id: `a${i}` } })) } });
  const ids = (res.body.events as { id: string }[]).map((e) => e.id);
  expect((await call(`${app.url}/v1/events/${ids[11]}/proof`, { key: org.key })).body.tree_size).toBe(12);
  await app.services.integrator.stop(); // nothing integrates behind the audit's back from here
  return { org, ids };
}

async function audit(org: TestOrg) {
  const res = await runCli(['ledger', 'audit', '--org', org.id, '--verifier-key', TEST_LEDGER_SIGNER.text, '--json'], env);
  const { reports } = JSON.parse(res.stdout) as { reports: { findings: { kind: string; leaf_index?: number; event_id?: string }[] }[] };
  return { code: res.code, findings: reports[0]?.findings ?? [] };
}

const events = () => app.collections.events;

test('an untouched log passes', async () => {
  const { org } = await signedOrg();
  expect(await audit(org)).toEqual({ code: 0, findings: [] });
});

test('an edited event is named', async () => {
  const { org, ids } = await signedOrg();
  await events().updateOne({ tenant: org.id, _id: ids[4] }, { $set: { action: 'nothing.happened' } });
  expect(await audit(org)).toEqual({ code: 1, findings: [{ kind: 'edited', leaf_index: 4, event_id: ids[4], detail: expect.any(String) }] });
});

test('a deleted event is named by its leaf, with or without renumbering the rest', async () => {
  const { org, ids } = await signedOrg();
  await events().deleteOne({ tenant: org.id, _id: ids[11] });
  expect((await audit(org)).findings).toEqual([expect.objectContaining({ kind: 'deleted', leaf_index: 11 })]);
  const second = await signedOrg();
  await events().deleteOne({ tenant: second.org.id, _id: second.ids[3] });
  for (let seq = 5; seq <= 12; seq++) await events().updateOne({ tenant: second.org.id, seq }, { $set: { seq: seq - 1 } });
  const { findings } = await audit(second.org);
  expect(findings.filter((f) => f.kind === 'deleted')).toEqual([expect.objectContaining({ leaf_index: 3 })]);
  expect(findings.filter((f) => f.kind === 'moved').map((f) => f.event_id)).toEqual(second.ids.slice(4));
});

test('an inserted event is named, and the events it pushed aside', async () => {
  const { org, ids } = await signedOrg();
  for (let seq = 12; seq >= 6; seq--) await events().updateOne({ tenant: org.id, seq }, { $set: { seq: seq + 1 } });
  const template = await events().findOne({ tenant: org.id, _id: ids[0] });
  if (!template) throw new Error('no event');
  const forged = { ...template, _id: uuidv7(), seq: 6, actor_id: 'mallory' };
  await events().insertOne(forged);
  const { findings } = await audit(org);
  expect(findings.filter((f) => f.kind === 'inserted')).toEqual([expect.objectContaining({ leaf_index: 5, event_id: forged._id })]);
  expect(findings.filter((f) => f.kind === 'moved').map((f) => f.event_id)).toEqual(ids.slice(5, 11));
});

test('two events swapped are both named as moved', async () => {
  const { org, ids } = await signedOrg();
  await events().updateOne({ tenant: org.id, _id: ids[2] }, { $set: { seq: -1 } });
  await events().updateOne({ tenant: org.id, _id: ids[7] }, { $set: { seq: 3 } });
  await events().updateOne({ tenant: org.id, _id: ids[2] }, { $set: { seq: 8 } });
  expect((await audit(org)).findings.map((f) => [f.kind, f.event_id])).toEqual([['moved', ids[7]], ['moved', ids[2]]]);
});

test('a changed checkpoint or tile is found', async () => {
  const { org } = await signedOrg();
  await app.collections.ledgerCheckpoints.updateOne({ tenant: org.id, size: 12 }, { $set: { root: Buffer.alloc(32).toString('base64') } });
  const { code, findings } = await audit(org);
  expect(code).toBe(1);
  expect(findings.map((f) => f.kind)).toEqual(expect.arrayContaining(['checkpoint']));

  const other = await signedOrg();
  const tiles = app.collections.ledgerTiles;
  const tile = await tiles.findOne({ _id: `${other.org.id}/0/0/012` });
  if (!tile) throw new Error('no tile');
  const bytes = Buffer.from(tile.hashes.buffer);
  bytes[0] = (bytes[0] ?? 0) ^ 1;
  await tiles.updateOne({ _id: tile._id }, { $set: { hashes: new Binary(bytes) } });
  const tileAudit = await audit(other.org);
  expect(tileAudit.code).toBe(1);
  expect(tileAudit.findings.map((f) => f.kind)).toEqual(['tiles']);
});

test('the background audit counts what it finds', async () => {
  const { org, ids } = await signedOrg();
  await events().updateOne({ tenant: org.id, _id: ids[0] }, { $set: { actor_id: 'someone.else' } });
  const before = app.services.ledgerAudit.stats.findings;
  await app.services.ledgerAudit.runOnce();
  expect(app.services.ledgerAudit.stats.findings - before).toBeGreaterThanOrEqual(1);
});
