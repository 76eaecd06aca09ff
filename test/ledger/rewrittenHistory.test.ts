/**
 * History is never re-signed (review item 6). Someone with write access to the database edits an event,
 * deletes the organization's tiles, checkpoints and heads, and the service restarts: it signs nothing
 * over the rewritten history, halts that organization's log (logged, in metrics), `ledger audit` fails,
 * and only the operator's `ledger reseal` seals it again. Stored ledger state that this key did not sign,
 * or that does not give the signed root, halts the log too; a reseal extends the newest signed checkpoint
 * only when the stored events still reproduce it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { collections, type Collections } from '../../src/db/database';
import { checkpointText } from '../../src/domain/ledger/formats';
import { privateKeyText, signerFromSeed, signNote } from '../../src/domain/ledger/note';
import { call, eventBody } from '../helpers/api';
import { mongoUri, startTestApp, TEST_LEDGER_SEED, TEST_LEDGER_SIGNER, type TestApp, type TestOrg, uniqueDbName } from '../helpers/harness';
import { runCli } from '../helpers/processes';
import { eventually } from '../helpers/waiting';

const dbName = uniqueDbName('rewritten');
let dir: string;
let cliEnv: Record<string, string>;
/** The attacker's own connection to the database. */
let attacker: MongoClient;
let c: Collections;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rewritten-'));
  writeFileSync(join(dir, 'key'), `${privateKeyText(TEST_LEDGER_SIGNER.name, TEST_LEDGER_SEED)}\n`, { mode: 0o600 });
  cliEnv = { MONGODB_DB: dbName, LEDGER_SIGNING_KEY_FILE: join(dir, 'key'), LEDGER_NAME: TEST_LEDGER_SIGNER.name };
  attacker = await MongoClient.connect(mongoUri());
  c = collections(attacker.db(dbName));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await attacker.db(dbName).dropDatabase();
  await attacker.close();
});

/** The service, started (again) on the same database, as a restart would. */
const start = (logs?: string[]) => startTestApp({ label: 'rewritten', sharedDbName: dbName, logTo: logs ? { write: (line: string) => { logs.push(line); } } : undefined });

async function write(app: TestApp, org: TestOrg, count: number): Promise<string> {
  const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: count }, (_, i) => eventBody({ actor: { id: `h${i}` } })) } });
  expect(res.status).toBe(201);
  return (res.body.events as { id: string }[])[count - 1]?.id as string;
}

async function waitSigned(app: TestApp, org: TestOrg, id: string): Promise<{ tree_size: number; checkpoint: string }> {
  const proof = await call(`${app.url}/v1/events/${id}/proof`, { key: org.key });
  expect(proof.status).toBe(200);
  return (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body;
}

/** Waits until `tenant`'s log is halted on `app` (its rounds run every 200 ms here): its reason; fails after 30 s. */
async function halted(app: TestApp, tenant: string): Promise<string> {
  return eventually(`${tenant}'s log halted`, () => app.services.integrator.haltedReason(tenant), 30_000);
}

async function audit(org: TestOrg) {
  return runCli(['ledger', 'audit', '--org', org.id, '--json'], cliEnv);
}

test('the rewritten-history attack: nothing is signed over it, the log halts, audit fails, only reseal seals it', async () => {
  let app = await start();
  const org = await app.org();
  const newest = await write(app, org, 301);
  const signed = await waitSigned(app, org, newest);
  expect(signed.tree_size).toBe(301);
  await app.close();

  // The attacker: one event edited, the organization's ledger state deleted.
  await c.events.updateOne({ tenant: org.id, seq: 150 }, { $set: { actor_name: 'Someone Else' } });
  await c.ledgerTiles.deleteMany({ tenant: org.id });
  await c.ledgerCheckpoints.deleteMany({ tenant: org.id });
  await c.ledgerHeads.deleteMany({ _id: org.id });

  const logs: string[] = [];
  app = await start(logs);
  try {
    const later = await write(app, org, 5);
    expect(await halted(app, org.id)).not.toBeNull();
    // Nothing signed over the rewritten history: no checkpoint at all, and a proof is refused.
    expect(await c.ledgerCheckpoints.countDocuments({ tenant: org.id })).toBe(0);
    const proof = await call(`${app.url}/v1/events/${later}/proof`, { key: org.key });
    expect(proof.status).toBe(404);
    expect(app.services.integrator.stats.halted).toBe(1);
    // Either check catches it: the installation log holds the organization's old checkpoints, or the
    // events that no checkpoint covers were not stored here.
    expect(app.services.integrator.haltedReason(org.id)).toMatch(/the installation log holds checkpoints of this log, but none is stored|the ledger state is missing/);
    expect(logs.some((line) => line.includes('ledger integration HALTED') && line.includes(org.id))).toBe(true);
    const metrics = await app.http.metrics.registry.metrics();
    expect(metrics).toMatch(/^ledger_halted_organizations 1$/m);

    const audited = await audit(org);
    expect(audited.code).toBe(1);
    expect(audited.stdout).toContain('"kind":"unanchored"');

    // The edited event has no valid MAC any more: the audit names it.
    expect(audited.stdout).toContain('"kind":"foreign"');
    // The operator's explicit command seals the events as they are (no signed checkpoint is left), but
    // only up to the edited one: that one is not the service's own.
    const resealed = await runCli(['ledger', 'reseal', '--org', org.id, '--json'], cliEnv);
    expect(resealed.code).toBe(0);
    expect(JSON.parse(resealed.stdout)).toEqual({ anchor: null, size: 149, planted: 0, adopted: 0, setAside: 0, foreignLeft: 1 });
    expect(resealed.stderr).toContain('ledger RESEALED by an operator');
    // Adopting it as it is, is the operator's decision, made explicitly.
    const adopted = await runCli(['ledger', 'reseal', '--org', org.id, '--adopt', '--json'], cliEnv);
    expect(adopted.code).toBe(0);
    expect(JSON.parse(adopted.stdout)).toEqual({ anchor: 149, size: 306, planted: 0, adopted: 1, setAside: 0, foreignLeft: 0 });
    expect((await audit(org)).code).toBe(0);
  } finally {
    await app.close();
  }
});

test('tiles deleted: the log halts; reseal rebuilds them as an extension of the signed checkpoint, but refuses edited events', async () => {
  let app = await start();
  const org = await app.org();
  const signed = await waitSigned(app, org, await write(app, org, 300));
  expect(signed.tree_size).toBe(300);
  await app.close();
  await c.ledgerTiles.deleteMany({ tenant: org.id });

  app = await start();
  try {
    await write(app, org, 3);
    expect(await halted(app, org.id)).toContain('the stored tiles do not give the root of the signed checkpoint of size 300');
    expect((await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body.tree_size).toBe(300);

    // An edited event makes the reseal refuse: the events no longer give the signed root.
    const original = await c.events.findOne({ tenant: org.id, seq: 20 });
    await c.events.updateOne({ tenant: org.id, seq: 20 }, { $set: { action: 'user.deleted' } });
    const refused = await runCli(['ledger', 'reseal', '--org', org.id], cliEnv);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the stored events no longer give the root of the signed checkpoint of size 300');
    expect(await c.ledgerCheckpoints.countDocuments({ tenant: org.id })).toBeGreaterThan(0);
    expect(await c.ledgerCheckpoints.findOne({ _id: `${org.id}/303` })).toBeNull();

    // Restored, it extends the signed tree: the old checkpoint's proofs and the new one's hold.
    await c.events.updateOne({ tenant: org.id, seq: 20 }, { $set: { action: original?.action as string } });
    const resealed = await runCli(['ledger', 'reseal', '--org', org.id, '--json'], cliEnv);
    expect(resealed.code).toBe(0);
    expect(JSON.parse(resealed.stdout)).toEqual({ anchor: 300, size: 303, planted: 0, adopted: 0, setAside: 0, foreignLeft: 0 });
    const consistency = await call(`${app.url}/v1/ledger/consistency?from=300&to=303`, { key: org.key });
    expect(consistency.status).toBe(200);
    // This instance resumes by itself at its next look at the halted log.
    await app.services.integrator.integrate(org.id, { recheck: true });
    expect(app.services.integrator.haltedReason(org.id)).toBeNull();
    const more = await write(app, org, 2);
    expect((await call(`${app.url}/v1/events/${more}/proof`, { key: org.key })).body.tree_size).toBe(305);
  } finally {
    await app.close();
  }
});

test('a checkpoint this key did not sign is never built upon', async () => {
  let app = await start();
  const org = await app.org();
  await waitSigned(app, org, await write(app, org, 10));
  await app.close();
  // Planted: a checkpoint of a larger tree, signed by another key, and the head pointing at it.
  const impostor = signerFromSeed(TEST_LEDGER_SIGNER.name, Buffer.alloc(32, 7));
  const root = Buffer.alloc(32, 1);
  const note = signNote(checkpointText({ origin: `${TEST_LEDGER_SIGNER.name}/${org.id}`, size: 12, root }), impostor);
  await c.ledgerCheckpoints.insertOne({ _id: `${org.id}/12`, tenant: org.id, size: 12, root: root.toString('base64'), note, created_at: new Date() });
  await c.ledgerHeads.updateOne({ _id: org.id }, { $set: { size: 12 } });

  app = await start();
  try {
    await write(app, org, 5);
    expect(await halted(app, org.id)).toContain('is not one this installation\'s key signed');
    expect(await c.ledgerCheckpoints.findOne({ _id: `${org.id}/15` })).toBeNull();
    const resealed = await runCli(['ledger', 'reseal', '--org', org.id, '--json'], cliEnv);
    expect(JSON.parse(resealed.stdout)).toEqual({ anchor: 10, size: 15, planted: 1, adopted: 0, setAside: 0, foreignLeft: 0 });
  } finally {
    await app.close();
  }
});
