/**
 * The installation log at rest ("Trust at rest"): someone who can write the database, but not read the
 * key file, must make the service neither sign an entry it did not write nor roll an organization back
 * unnoticed. Attacks through the database, each with the service restarted on it and our own witness
 * (`audit-ledger witness serve`) following the installation log where it matters:
 * - an organization wiped and its installation entries relabelled to another organization: its log halts
 *   (the entries' bodies say whose checkpoints they are), and `ledger audit` names the relabelled entries
 *   and the wipe;
 * - an organization wiped with its installation entries deleted: the installation log halts (entries
 *   missing from its signed tree), nothing is written below its signed size, no answer calls an entry
 *   witnessed with a proof that does not verify, and `ledger audit` names the missing entries;
 * - a genuine entry's fields copied to another index, or an entry made up: foreign, moved aside, never signed;
 * - the upgrade: entries from before MACs inside the signed tree get their MAC at start, one past it does not.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { collections, type Collections } from '../../src/db/database';
import type { LedgerEntryDoc } from '../../src/db/documents';
import { isOwnEntry } from '../../src/db/rowMacs';
import { fromBase64 } from '../../src/domain/ledger/formats';
import { leafHash, verifyInclusion } from '../../src/domain/ledger/merkle';
import { privateKeyText } from '../../src/domain/ledger/note';
import { RowMac } from '../../src/domain/ledger/rowMac';
import { parseEntryBundle } from '../../src/domain/ledger/tilePaths';
import { checkpointBody, parsePolicy, type Policy } from '../../src/domain/ledger/witnessFormats';
import { INSTALLATION } from '../../src/domain/ledger/log';
import { call, eventBody, eventually } from '../helpers/api';
import { mongoUri, startTestApp, TEST_LEDGER_SEED, TEST_LEDGER_SIGNER, type TestApp, type TestOrg, uniqueDbName } from '../helpers/harness';
import { runCli, startWitnessProcess, type WitnessProcess } from '../helpers/processes';

const INSTALLATION_ORIGIN = `${TEST_LEDGER_SIGNER.name}/installation`;
const rowMac = RowMac.fromSigner(TEST_LEDGER_SIGNER);
let dir: string;
let keyFile: string;
/** The attacker's own connection to the database. */
let attacker: MongoClient;
const databases: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'installation-at-rest-'));
  keyFile = join(dir, 'key');
  writeFileSync(keyFile, `${privateKeyText(TEST_LEDGER_SIGNER.name, TEST_LEDGER_SEED)}\n`, { mode: 0o600 });
  attacker = await MongoClient.connect(mongoUri());
});
afterAll(async () => {
  for (const name of databases) await attacker.db(name).dropDatabase().catch(() => undefined);
  await attacker.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A database of its own, which survives the service's restarts (dropped at the end). */
function database(label: string): { name: string; c: Collections } {
  const name = uniqueDbName(label);
  databases.push(name);
  return { name, c: collections(attacker.db(name)) };
}

/** The service (again) on `dbName`, its log lines kept in `logs`. */
function start(dbName: string, logs: string[], witnessPolicy?: Policy): Promise<TestApp> {
  return startTestApp({ label: 'at-rest', sharedDbName: dbName, witnessPolicy, logTo: { write: (line: string) => { logs.push(line); } } });
}

async function write(app: TestApp, org: TestOrg, count: number): Promise<void> {
  const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: count }, (_, i) => eventBody({ actor: { id: `r${i}` } })) } });
  expect(res.status).toBe(201);
}

/** The organization's checkpoint answer once it is of `size` events and, with `witnessed`, in a witnessed installation checkpoint. */
async function checkpointOf(app: TestApp, org: TestOrg, size: number, witnessed: boolean): Promise<any> {
  return eventually(`a checkpoint of ${size}${witnessed ? ', witnessed' : ''}`, async () => {
    const res = await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key });
    return res.status === 200 && res.body.tree_size >= size && (!witnessed || res.body.installation?.witnessed) ? res.body : null;
  });
}

/** That a checkpoint answer's installation inclusion, if any, is a proof that verifies (and so may be called witnessed). */
function expectSoundInclusion(answer: any): void {
  const inst = answer.installation;
  if (!inst) return;
  expect(inst.entry).toBe(checkpointBody(answer.checkpoint));
  const path = (inst.inclusion_path as string[]).map((h) => fromBase64(h) as Uint8Array);
  const root = fromBase64(inst.root_hash) as Uint8Array;
  expect({ index: inst.entry_index, size: inst.tree_size, witnessed: inst.witnessed, verifies: verifyInclusion(inst.entry_index, inst.tree_size, leafHash(inst.entry), path, root) })
    .toEqual({ index: inst.entry_index, size: inst.tree_size, witnessed: inst.witnessed, verifies: true });
}

async function audit(dbName: string, org?: TestOrg): Promise<{ code: number; installation: { kind: string; detail: string; leaf_index?: number }[]; findings: { kind: string; detail: string }[] }> {
  const res = await runCli(['ledger', 'audit', ...(org ? ['--org', org.id] : []), '--json'], { MONGODB_DB: dbName, LEDGER_SIGNING_KEY_FILE: keyFile, LEDGER_NAME: TEST_LEDGER_SIGNER.name });
  const parsed = JSON.parse(res.stdout) as { reports: { findings: { kind: string; detail: string }[] }[]; installation: { kind: string; detail: string; leaf_index?: number }[] };
  return { code: res.code, installation: parsed.installation, findings: parsed.reports.flatMap((r) => r.findings) };
}

/** The organization's events and ledger state deleted, as a wipe through the database would. */
async function wipe(c: Collections, org: TestOrg): Promise<void> {
  await c.events.deleteMany({ tenant: org.id });
  await c.ledgerTiles.deleteMany({ tenant: org.id });
  await c.ledgerCheckpoints.deleteMany({ tenant: org.id });
  await c.ledgerHeads.deleteMany({ _id: org.id });
}

async function installationSize(c: Collections): Promise<number> {
  return (await c.ledgerHeads.findOne({ _id: INSTALLATION }))?.size ?? 0;
}

/** A witness of its own for one test's installation log (a witness follows one history per origin), and the policy naming it. */
async function ownWitness(label: string): Promise<{ witness: WitnessProcess; policy: Policy }> {
  const witness = await startWitnessProcess(dir, `witness.test/${label}`, `log ${INSTALLATION_ORIGIN} ${TEST_LEDGER_SIGNER.text}\n`);
  return { witness, policy: parsePolicy(`witness w ${witness.vkey} ${witness.url}\nquorum w\n`) };
}

describe('with a witness', () => {
  test('entries relabelled to another organization: the wiped organization still halts, and ledger audit names both', async () => {
    const { name: dbName, c } = database('relabel');
    const { witness, policy } = await ownWitness('relabel');
    const logs: string[] = [];
    let app = await start(dbName, logs, policy);
    const victim = await app.org();
    const other = await app.org();
    await write(app, victim, 4);
    await checkpointOf(app, victim, 4, true);
    await write(app, other, 2);
    await checkpointOf(app, other, 2, true);
    await app.close();

    // The attacker: the victim's events and ledger state deleted, its installation entries made to look like the other's.
    await wipe(c, victim);
    const relabelled = await c.ledgerEntries.updateMany({ tenant: victim.id }, { $set: { tenant: other.id } });
    expect(relabelled.modifiedCount).toBeGreaterThan(0);

    app = await start(dbName, logs, policy);
    try {
      await write(app, victim, 3);
      const reason = await eventually('the victim halted', () => Promise.resolve(app.services.integrator.haltedReason(victim.id)));
      expect(reason).toContain('the installation log holds checkpoints of this log, but none is stored');
      // Nothing signed over the new history, so nothing of it in the installation log either.
      expect(await c.ledgerCheckpoints.countDocuments({ tenant: victim.id })).toBe(0);
      expect(logs.some((line) => line.includes('ledger integration HALTED') && line.includes(victim.id))).toBe(true);
      expect(await app.http.metrics.registry.metrics()).toMatch(/^ledger_halted_organizations 1$/m);
      // The other organization goes on, its proofs sound.
      await write(app, other, 1);
      expectSoundInclusion(await checkpointOf(app, other, 3, true));

      const all = await audit(dbName);
      expect(all.code).toBe(1);
      expect(all.installation.filter((f) => f.kind === 'foreign').map((f) => f.detail).join('\n')).toMatch(new RegExp(`its tenant field says ${other.id}, but its body is a checkpoint of ${victim.id}'s log: relabelled`));
      expect(all.installation).toContainEqual(expect.objectContaining({ kind: 'unanchored', detail: expect.stringContaining(`organization ${victim.id}: the installation log holds checkpoints of its log`) }));
      const alone = await audit(dbName, victim);
      expect(alone.code).toBe(1);
      expect(alone.findings).toContainEqual(expect.objectContaining({ kind: 'unanchored', detail: expect.stringContaining('none is stored: its ledger state was deleted') }));
    } finally {
      await app.close();
      await witness.stop();
    }
  }, 60_000);

  test('entries deleted from the signed tree: the installation log halts, nothing is written below its signed size, nothing unproven is called witnessed', async () => {
    const { name: dbName, c } = database('deleted');
    const { witness, policy } = await ownWitness('deleted');
    const logs: string[] = [];
    let app = await start(dbName, logs, policy);
    const victim = await app.org();
    const bystander = await app.org();
    // Interleaved, so that the victim's entries sit inside the installation tree, not at its end.
    for (let round = 0; round < 3; round++) {
      await write(app, victim, 2);
      await checkpointOf(app, victim, 2 * (round + 1), true);
      await write(app, bystander, 1);
      await checkpointOf(app, bystander, round + 1, true);
    }
    await app.close();
    const signedSize = await installationSize(c);
    const victimEntries = (await c.ledgerEntries.find({ tenant: victim.id }).toArray()).map((e) => e._id);
    expect(Math.min(...victimEntries)).toBeLessThan(signedSize - 1);
    const kept = (await c.ledgerEntries.find({ _id: { $lt: signedSize }, tenant: { $ne: victim.id } }).toArray()).map((e) => [e._id, e.body]);

    await wipe(c, victim);
    await c.ledgerEntries.deleteMany({ tenant: victim.id });

    app = await start(dbName, logs, policy);
    try {
      await write(app, victim, 5);
      await write(app, bystander, 1);
      const reason = await eventually('the installation log halted', () => Promise.resolve(app.services.integrator.haltedReason(INSTALLATION)));
      expect(reason).toContain(`of the installation log's entries 0 to ${signedSize - 1} are missing from its signed tree of ${signedSize}`);
      expect(logs.some((line) => line.includes('ledger integration HALTED') && line.includes('"tenant":"installation"'))).toBe(true);
      expect(await app.http.metrics.registry.metrics()).toMatch(/^ledger_halted_organizations [1-9]/m);
      // The victim's new checkpoint is signed (its old entries are gone: nothing says it had any), and
      // appended, but only above the signed size: below it, exactly the entries that were left.
      await eventually('the victim\'s new checkpoint appended', async () => (await c.ledgerEntries.countDocuments({ tenant: victim.id })) > 0);
      expect((await c.ledgerEntries.find({ _id: { $lt: signedSize } }).sort({ _id: 1 }).toArray()).map((e) => [e._id, e.body])).toEqual(kept);
      const appended = await c.ledgerEntries.find({ tenant: victim.id }).toArray();
      expect(Math.min(...appended.map((e) => e._id))).toBeGreaterThanOrEqual(signedSize);
      // No installation checkpoint is signed over it, and no answer calls an entry witnessed unproven.
      expect(await installationSize(c)).toBe(signedSize);
      for (const org of [victim, bystander]) {
        const answer = await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key });
        expect(answer.status).toBe(200);
        expectSoundInclusion(answer.body);
      }
      const victimAnswer = (await call(`${app.url}/v1/ledger/checkpoint`, { key: victim.key })).body;
      expect(victimAnswer.installation?.witnessed ?? false).toBe(false);

      const all = await audit(dbName);
      expect(all.code).toBe(1);
      const missing = all.installation.filter((f) => f.kind === 'installation' && f.detail.includes('is missing from its signed tree'));
      expect(missing.map((f) => f.leaf_index)).toEqual(victimEntries.filter((i) => i < signedSize).sort((a, b) => a - b));
    } finally {
      await app.close();
      await witness.stop();
    }
  }, 60_000);
});

test('a genuine entry copied to another index, or an entry made up, is foreign: moved aside, never signed', async () => {
  const { name: dbName, c } = database('forged');
  const logs: string[] = [];
  const app = await start(dbName, logs);
  try {
    const org = await app.org();
    await write(app, org, 3);
    await checkpointOf(app, org, 3, false);
    await eventually('its entry signed', async () => (await installationSize(c)) >= 1);
    await app.services.integrator.stop();
    const genuine = await c.ledgerEntries.findOne({ tenant: org.id });
    if (!genuine) throw new Error('no entry');
    expect(isOwnEntry(rowMac, genuine)).toBe(true);
    // At the next free indices: the genuine entry's every field (its MAC included) at another index, and
    // an entry made up for the organization with that MAC.
    const next = await c.ledgerEntries.countDocuments({});
    const madeUp = `${TEST_LEDGER_SIGNER.name}/${org.id}\n99\n${Buffer.alloc(32, 7).toString('base64')}\n`;
    const copied: LedgerEntryDoc = { ...genuine, _id: next };
    const forged: LedgerEntryDoc = { _id: next + 1, tenant: org.id, checkpoint: `${org.id}/99`, body: madeUp, mac: genuine.mac };
    await c.ledgerEntries.insertMany([copied, forged]);
    expect(isOwnEntry(rowMac, copied)).toBe(false);

    app.services.integrator.start();
    await write(app, org, 2);
    await checkpointOf(app, org, 5, false);
    await eventually('an installation tree past them', async () => (await installationSize(c)) >= next + 3);
    // Both moved aside, named and counted; their indices hold the service's own entries.
    const aside = await c.foreignRows.find({ kind: 'entry' }).toArray();
    expect(aside.map((doc) => doc.row._id).sort()).toEqual([next, next + 1]);
    for (const index of [next, next + 1]) expect(isOwnEntry(rowMac, (await c.ledgerEntries.findOne({ _id: index })) as LedgerEntryDoc)).toBe(true);
    expect(logs.some((line) => line.includes('FOREIGN entry row'))).toBe(true);
    expect(await app.http.metrics.registry.metrics()).toMatch(/^ledger_foreign_rows_total\{kind="entry"\} 2$/m);
    // The made-up body is in no signed tree: the installation log's entry bundle holds only the service's own.
    const size = await installationSize(c);
    const bundle = Buffer.from(await (await fetch(`${app.url}/v1/ledger/installation/tile/entries/000.p/${size}`)).arrayBuffer());
    const bodies = parseEntryBundle(bundle).map((b) => b.toString());
    expect(bodies).toHaveLength(size);
    expect(bodies).not.toContain(madeUp);
    // Every checkpoint answer is proven; the audit finds nothing left.
    expectSoundInclusion((await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body);
    await app.services.integrator.stop();
    const audited = await audit(dbName);
    expect(audited.installation).toEqual([]);
    expect(audited.code).toBe(0);

    // A genuine entry relabelled to another organization, or its checkpoint field changed: foreign to the audit.
    await c.ledgerEntries.updateOne({ _id: genuine._id }, { $set: { tenant: 'org_someoneelse' } });
    const relabelled = await audit(dbName);
    expect(relabelled.installation).toContainEqual(expect.objectContaining({ kind: 'foreign', leaf_index: genuine._id }));
  } finally {
    await app.close();
  }
});

test('upgrade: entries from before MACs inside the signed tree get their MAC at start; one past it does not, and is moved aside', async () => {
  const { name: dbName, c } = database('upgrade');
  const logs: string[] = [];
  let app = await start(dbName, logs);
  const orgs = [await app.org(), await app.org()];
  for (const org of orgs) {
    await write(app, org, 2);
    await checkpointOf(app, org, 2, false);
  }
  await eventually('both entries signed', async () => (await installationSize(c)) >= 2);
  await app.close();
  const signedSize = await installationSize(c);
  // As written before entries had a MAC, and one more appended past the signed tree (by an instance of
  // that version that stopped before signing it): a copy of the last one, without a MAC.
  await c.ledgerEntries.updateMany({}, { $unset: { mac: '' } });
  const last = await c.ledgerEntries.findOne({ _id: signedSize - 1 });
  if (!last) throw new Error('no entry');
  await c.ledgerEntries.insertOne({ _id: signedSize, tenant: last.tenant, checkpoint: last.checkpoint, body: last.body });

  app = await start(dbName, logs);
  try {
    await eventually('the signed entries sealed', async () => (await c.ledgerEntries.countDocuments({ mac: { $exists: true } })) >= signedSize);
    for (const entry of await c.ledgerEntries.find({ _id: { $lt: signedSize } }).toArray()) expect(isOwnEntry(rowMac, entry)).toBe(true);
    expect((await c.ledgerEntries.findOne({ _id: signedSize }))?.mac).toBeUndefined();
    // Read back to be signed once more is appended: foreign, moved aside, its index filled by the service's own.
    await write(app, orgs[0] as TestOrg, 1);
    await checkpointOf(app, orgs[0] as TestOrg, 3, false);
    await eventually('an installation tree past it', async () => (await installationSize(c)) > signedSize);
    expect((await c.foreignRows.find({ kind: 'entry' }).toArray()).map((doc) => doc.row._id)).toEqual([signedSize]);
    expect(isOwnEntry(rowMac, (await c.ledgerEntries.findOne({ _id: signedSize })) as LedgerEntryDoc)).toBe(true);
    await app.services.integrator.stop();
    const audited = await audit(dbName);
    expect(audited.installation).toEqual([]);
  } finally {
    await app.close();
  }
});

test('entries swapped inside the signed tree: the checkpoint answer gives no proof, never one that does not verify, and no 5xx', async () => {
  const { name: dbName, c } = database('swapped');
  const app = await start(dbName, []);
  try {
    const orgs = [await app.org(), await app.org()];
    for (const org of orgs) {
      await write(app, org, 2);
      expectSoundInclusion(await eventually('its inclusion in the installation log', async () => {
        const res = await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key });
        return res.body.installation ? res.body : null;
      }));
    }
    await app.services.integrator.stop();
    const [a, b] = await Promise.all(orgs.map((org) => c.ledgerEntries.findOne({ tenant: org.id })));
    if (!a || !b) throw new Error('no entries');
    // Each organization's entry moved to the other's index: its proof from the tiles cannot verify.
    await c.ledgerEntries.deleteMany({ _id: { $in: [a._id, b._id] } });
    await c.ledgerEntries.insertMany([{ ...a, _id: b._id }, { ...b, _id: a._id }]);
    const size = await installationSize(c);
    for (const org of orgs) {
      const res = await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key });
      expect(res.status).toBe(200);
      expectSoundInclusion(res.body);
      expect(res.body.installation).toBeNull();
      const pinned = await call(`${app.url}/v1/ledger/checkpoint?installation_size=${size}`, { key: org.key });
      expect(pinned.status).toBe(404);
    }
  } finally {
    await app.close();
  }
});
