/**
 * The witnessed ledger, end to end with our own witness (`audit-ledger witness serve`, a child process):
 * organization checkpoints rolled up into the installation log, its checkpoints cosigned, the proofs a
 * client checks, the tlog-tiles API, and the attacks: a wiped database restarted, and a split view (two
 * copies of one database signing different histories) are refused by the witness and raise an alarm.
 * The same with transparency-dev's witness and Tessera's fsck: `goInterop.test.ts`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseCosignerVerifier, verifyCosignature } from '../../src/domain/ledger/cosigner';
import { fromBase64, parseCheckpoint } from '../../src/domain/ledger/formats';
import { leafHash, nodesOf, rootHash, verifyInclusion } from '../../src/domain/ledger/merkle';
import { openNote } from '../../src/domain/ledger/note';
import { checkpointBody, parsePolicy, splitNote } from '../../src/domain/ledger/witnessFormats';
import { parseEntryBundle } from '../../src/domain/ledger/tilePaths';
import { INSTALLATION } from '../../src/domain/ledger/log';
import { auditInstallation } from '../../src/ledger/audit';
import { LedgerStore } from '../../src/db/ledgerStore';
import { WitnessStore } from '../../src/db/witnessStore';
import { MongoClient } from 'mongodb';
import { call, eventBody, eventually } from '../helpers/api';

import { mongoUri, startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from '../helpers/harness';
import { seedEvents } from '../helpers/seed';
import { runCli, startServerProcess, startWitnessProcess, type WitnessProcess } from '../helpers/processes';

const INSTALLATION_ORIGIN = `${TEST_LEDGER_SIGNER.name}/installation`;
let dir: string;
let witness: WitnessProcess;
/** A witness that does not follow our log: it answers 404, an error, not an alarm. */
let stranger: WitnessProcess;
let policyText: string;

async function write(app: TestApp, org: TestOrg, count: number): Promise<void> {
  const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: count }, (_, i) => eventBody({ actor: { id: `w${i}` } })) } });
  expect(res.status).toBe(201);
}

/** The organization's newest checkpoint once an installation checkpoint the witnesses cosigned includes it. */
async function witnessedCheckpoint(app: TestApp, org: TestOrg, size: number): Promise<any> {
  return eventually(`a witnessed checkpoint of ${size}`, async () => {
    const res = await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key });
    return res.status === 200 && res.body.tree_size >= size && res.body.installation?.witnessed ? res.body : null;
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'witnesses-'));
  witness = await startWitnessProcess(dir, 'witness.test/w1', `log ${INSTALLATION_ORIGIN} ${TEST_LEDGER_SIGNER.text}\n`);
  stranger = await startWitnessProcess(dir, 'witness.test/stranger', '# follows nothing\n');
  policyText = `witness w1 ${witness.vkey} ${witness.url}\nwitness stranger ${stranger.vkey} ${stranger.url}\nquorum w1\n`;
}, 90_000);
afterAll(async () => {
  await witness.stop();
  await stranger.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a witnessed installation', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ label: 'witnessed', witnessPolicy: parsePolicy(policyText) });
  });
  afterAll(() => app.close());

  test('an organization checkpoint is proven in an installation checkpoint the witness cosigned', async () => {
    // Another organization first, so that an installation checkpoint exists that does not include this one's.
    const earlier = await app.org();
    await write(app, earlier, 1);
    await witnessedCheckpoint(app, earlier, 1);
    const org = await app.org();
    await write(app, org, 5);
    const cp = await witnessedCheckpoint(app, org, 5);
    const inst = cp.installation;
    expect(inst.origin).toBe(INSTALLATION_ORIGIN);
    expect(inst.entry).toBe(checkpointBody(cp.checkpoint));
    // The installation checkpoint is signed by the installation's key...
    const signed = parseCheckpoint(openNote(inst.checkpoint, TEST_LEDGER_SIGNER));
    expect(signed.size).toBe(inst.tree_size);
    expect(Buffer.from(signed.root).toString('base64')).toBe(inst.root_hash);
    // ... cosigned by the witness (cosignature/v1 over its body) ...
    const { text, signatures } = splitNote(inst.checkpoint);
    const verifier = parseCosignerVerifier(witness.vkey);
    const cosignatures = signatures.filter((s) => verifyCosignature(text, s, verifier) !== null);
    expect(cosignatures).toHaveLength(1);
    // ... and includes the organization checkpoint's body as an entry.
    expect(verifyInclusion(inst.entry_index, inst.tree_size, leafHash(inst.entry), inst.inclusion_path.map((h: string) => fromBase64(h) as Uint8Array), signed.root)).toBe(true);
    expect(cp.witnessed_tree_size).toBeGreaterThanOrEqual(inst.tree_size);
    // The witness's own state holds the installation log.
    const state = JSON.parse(readFileSync(witness.statePath, 'utf8')) as { logs: Record<string, { size: number }> };
    expect(state.logs[INSTALLATION_ORIGIN]?.size).toBeGreaterThanOrEqual(inst.tree_size);

    // A witness that does not know the log answered 404: an error, shown, never an alarm.
    const summary = await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key });
    expect(summary.status).toBe(200);
    const statuses = await app.services.witnesses?.refresh();
    expect(statuses?.find((s) => s.name === 'stranger')).toMatchObject({ cosigned_size: 0, alarm: null, error: expect.stringContaining('404') });
    expect(statuses?.find((s) => s.name === 'w1')).toMatchObject({ alarm: null, error: null });

    // A size asked for: the proof is against that installation checkpoint.
    const pinned = await call(`${app.url}/v1/ledger/checkpoint?installation_size=${inst.tree_size}`, { key: org.key });
    expect(pinned.body.installation.tree_size).toBe(inst.tree_size);
    expect(inst.entry_index).toBeGreaterThan(0);
    const older = await app.collections.ledgerCheckpoints.findOne({ tenant: INSTALLATION, size: { $lte: inst.entry_index } });
    expect((await call(`${app.url}/v1/ledger/checkpoint?installation_size=${older?.size}`, { key: org.key })).status).toBe(400);
    expect((await call(`${app.url}/v1/ledger/checkpoint?installation_size=999999`, { key: org.key })).status).toBe(404);
  });

  test('the checkpoints of many organizations cost one installation round, not one each', async () => {
    const orgs = await Promise.all(Array.from({ length: 6 }, () => app.org()));
    await Promise.all(orgs.map((org) => write(app, org, 3)));
    const views = await Promise.all(orgs.map((org) => witnessedCheckpoint(app, org, 3)));
    // Their entries were appended together: one installation checkpoint covers several of them.
    const first = new Map<number, number>();
    for (const view of views) first.set(view.installation.entry_index, view.installation.tree_size);
    const entries = [...first.keys()].sort((a, b) => a - b);
    expect(entries.length).toBe(6);
    const installationCheckpoints = await app.collections.ledgerCheckpoints.countDocuments({ tenant: INSTALLATION });
    const entriesStored = await app.collections.ledgerEntries.countDocuments({});
    expect(installationCheckpoints).toBeLessThan(entriesStored);
  });

  test('every log is served as tlog-tiles: checkpoint, tiles and entry bundles', async () => {
    const org = await app.org();
    await write(app, org, 7);
    const cp = await witnessedCheckpoint(app, org, 7);
    const logCheckpoint = await fetch(`${app.url}/v1/ledger/log/checkpoint`, { headers: { authorization: `Bearer ${org.key}` } });
    expect(logCheckpoint.headers.get('content-type')).toContain('text/plain');
    const note = await logCheckpoint.text();
    const size = parseCheckpoint(openNote(note, TEST_LEDGER_SIGNER)).size;
    expect(size).toBeGreaterThanOrEqual(cp.tree_size);
    // The entry bundle holds the leaves' bytes; the level-0 tile their hashes.
    const bundle = Buffer.from(await (await fetch(`${app.url}/v1/ledger/log/tile/entries/000.p/${size}`, { headers: { authorization: `Bearer ${org.key}` } })).arrayBuffer());
    const leaves = parseEntryBundle(bundle);
    expect(leaves).toHaveLength(size);
    expect(JSON.parse(leaves[0]?.toString() ?? '{}')).toMatchObject({ org: org.id, seq: 1, v: 2 });
    const tile = await fetch(`${app.url}/v1/ledger/log/tile/0/000.p/${size}`, { headers: { authorization: `Bearer ${org.key}` } });
    expect(tile.headers.get('content-type')).toBe('application/octet-stream');
    const hashes = Buffer.from(await tile.arrayBuffer());
    expect(hashes.length).toBe(32 * size);
    leaves.forEach((leaf, i) => expect(hashes.subarray(32 * i, 32 * (i + 1)).equals(leafHash(leaf))).toBe(true));
    // Nothing beyond the signed tree, no other organization's log, no malformed path.
    expect((await fetch(`${app.url}/v1/ledger/log/tile/0/000.p/${size + 1}`, { headers: { authorization: `Bearer ${org.key}` } })).status).toBe(404);
    expect((await fetch(`${app.url}/v1/ledger/log/tile/0/000`, { headers: { authorization: `Bearer ${org.key}` } })).status).toBe(404);
    expect((await fetch(`${app.url}/v1/ledger/log/tile/0/0.p/1`, { headers: { authorization: `Bearer ${org.key}` } })).status).toBe(404);
    expect((await fetch(`${app.url}/v1/ledger/log/checkpoint`)).status).toBe(401);
    // The installation log is public here, its checkpoint with the cosignatures.
    const installation = await (await fetch(`${app.url}/v1/ledger/installation/checkpoint`)).text();
    expect(splitNote(installation).signatures.length).toBeGreaterThanOrEqual(2);
    const entries = await fetch(`${app.url}/v1/ledger/installation/tile/entries/000.p/1`);
    const first = Buffer.from(await entries.arrayBuffer());
    expect(first.subarray(2).toString()).toMatch(new RegExp(`^${TEST_LEDGER_SIGNER.name}/org_\\S+\\n\\d+\\n\\S+=\\n$`));
  });
});

test('two instances on one database append to one installation log: gapless entries, one history, no alarm', async () => {
  const own = await startWitnessProcess(dir, 'witness.test/two', `log ${INSTALLATION_ORIGIN} ${TEST_LEDGER_SIGNER.text}\n`);
  const policy = parsePolicy(`witness w ${own.vkey} ${own.url}\nquorum w\n`);
  const a = await startTestApp({ label: 'two-instances', witnessPolicy: policy, ledgerIntervalMs: 50 });
  const b = await startTestApp({ label: 'two-instances-b', witnessPolicy: policy, sharedDbName: a.dbName, ledgerIntervalMs: 50 });
  try {
    const orgs = await Promise.all(Array.from({ length: 8 }, () => a.org()));
    // Each instance writes (and so signs and appends) for its own organizations, in several rounds at once.
    for (let round = 0; round < 5; round++) {
      await Promise.all(orgs.map((org, i) => write(i % 2 === 0 ? a : b, org, 2)));
    }
    await Promise.all(orgs.map((org, i) => witnessedCheckpoint(i % 2 === 0 ? a : b, org, 10)));
    const c = a.collections;
    const ids = (await c.ledgerEntries.find({}).sort({ _id: 1 }).toArray()).map((e) => e._id);
    expect(ids).toEqual(ids.map((_, i) => i));
    // Every installation checkpoint either signed is the root of the entries' first `size`.
    const entries = await c.ledgerEntries.find({}).sort({ _id: 1 }).toArray();
    const checkpoints = await c.ledgerCheckpoints.find({ tenant: INSTALLATION }).toArray();
    expect(checkpoints.length).toBeGreaterThan(1);
    for (const checkpoint of checkpoints) {
      const root = await rootHash(nodesOf(entries.slice(0, checkpoint.size).map((e) => leafHash(e.body))), checkpoint.size);
      expect(root.toString('base64')).toBe(checkpoint.root);
    }
    // Each organization checkpoint appended once or more, never lost.
    const orgCheckpoints = await c.ledgerCheckpoints.countDocuments({ tenant: { $ne: INSTALLATION } });
    expect(new Set(entries.map((e) => e.checkpoint)).size).toBe(orgCheckpoints);
    expect(await c.ledgerWitnesses.countDocuments({ alarm: { $ne: null } })).toBe(0);
  } finally {
    await b.close();
    await a.close();
    await own.stop();
  }
});

describe('the customer\'s monitor', () => {
  test('passes while the log only grows, and fails once the organization\'s history is rewritten, even by an operator\'s reseal', async () => {
    const own = await startWitnessProcess(dir, 'witness.test/monitor', `log ${INSTALLATION_ORIGIN} ${TEST_LEDGER_SIGNER.text}\n`);
    const policyFile = join(dir, 'monitor.policy');
    writeFileSync(policyFile, `witness w ${own.vkey} ${own.url}\nquorum w\n`);
    const app = await startTestApp({ label: 'monitor', witnessPolicy: parsePolicy(readFileSync(policyFile, 'utf8')) });
    const state = join(dir, 'monitor.state');
    const monitor = () => runCli(['monitor', '--url', app.url, '--key', org.key, '--verifier-key', TEST_LEDGER_SIGNER.text, '--state', state, '--policy', policyFile], {});
    const org = await app.org();
    try {
      for (const n of [3, 4, 5]) {
        await write(app, org, n);
        await witnessedCheckpoint(app, org, 1);
      }
      const first = await monitor();
      expect(first.stdout).not.toContain('FAIL');
      expect(first.code).toBe(0);
      expect(first.stdout).toMatch(/ok {4}the organization's log .* each extend the one before \(newest: 12 events/);
      await write(app, org, 2);
      await witnessedCheckpoint(app, org, 14);
      const second = await monitor();
      expect(second.code).toBe(0);
      expect(second.stdout).toMatch(/the installation log's entries since \d+ give the signed root/);

      // The operator wipes the organization and seals a new history with the key: it enters the
      // installation log like every checkpoint, and the witness cosigns it (the installation log only
      // grew), but the customer's monitor sees the organization's log go back.
      await app.services.integrator.stop();
      const c = app.collections;
      await Promise.all([c.events.deleteMany({ tenant: org.id }), c.ledgerTiles.deleteMany({ tenant: org.id }), c.ledgerCheckpoints.deleteMany({ tenant: org.id }), c.ledgerHeads.deleteMany({ _id: org.id })]);
      // A restarted service on the wiped database (the first one stays silent: it only serves the same data).
      const restarted = await startTestApp({ label: 'monitor-restart', sharedDbName: app.dbName, witnessPolicy: parsePolicy(readFileSync(policyFile, 'utf8')) });
      try {
        // A longer history than the one it replaces: only the consistency proof can tell. The service
        // itself never gives the numbers the installation log says were signed again (a write now would
        // go after them, and its log halts); the operator, holding the key, writes the new history into
        // the database, sealed as the service seals its rows, and reseals it.
        await write(restarted, org, 1);
        await eventually('the organization halted', () => Promise.resolve(restarted.services.integrator.haltedReason(org.id)));
        await c.events.deleteMany({ tenant: org.id });
        await seedEvents(restarted, org, 20);
        await restarted.services.integrator.reseal(org.id);
        await eventually('the resealed checkpoint in a witnessed installation checkpoint', async () => {
          const cp = await call(`${restarted.url}/v1/ledger/checkpoint`, { key: org.key });
          return cp.body.tree_size === 20 && cp.body.installation?.witnessed;
        });
        const third = await runCli(['monitor', '--url', restarted.url, '--key', org.key, '--verifier-key', TEST_LEDGER_SIGNER.text, '--state', state, '--policy', policyFile], {});
        expect(third.code).toBe(1);
        expect(third.stdout).toMatch(/FAIL {2}the organization's checkpoint of 20 \(installation entry \d+\) extends the one of 14 \(entry \d+\): no valid consistency proof \(200\): the log was REWRITTEN/);
      } finally {
        await restarted.close();
      }
    } finally {
      await app.close();
      await own.stop();
    }
  });
});

test('LEDGER_INSTALLATION_TOKEN: the installation log\'s tiles need the token; an API key or a wrong token is refused', async () => {
  const token = 'installation-token-0123456789';
  const app = await startTestApp({ label: 'installation-token', http: { installationToken: token } });
  try {
    const org = await app.org();
    await write(app, org, 2);
    await eventually('an installation checkpoint', async () => (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body.installation);
    const get = (headers: Record<string, string>) => fetch(`${app.url}/v1/ledger/installation/checkpoint`, { headers });
    expect((await get({})).status).toBe(401);
    expect((await get({ authorization: `Bearer ${org.key}` })).status).toBe(401);
    expect((await get({ authorization: `Bearer ${token}x` })).status).toBe(401);
    const ok = await get({ authorization: `Bearer ${token}` });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toMatch(new RegExp(`^${INSTALLATION_ORIGIN}\\n`));
    // The organization's own log is still reached with its key, not the token.
    expect((await fetch(`${app.url}/v1/ledger/log/checkpoint`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
  } finally {
    await app.close();
  }
});

test('a malformed LEDGER_WITNESS_POLICY stops the service with the file and the line that is wrong', async () => {
  const policy = join(dir, 'bad.policy');
  writeFileSync(policy, `witness w ${witness.vkey}\ngroup g 3 w\nquorum g\n`);
  await expect(startServerProcess({ LEDGER_WITNESS_POLICY: policy })).rejects.toThrow(/the witness policy .*bad\.policy is not a c2sp\.org\/tlog-policy file: policy line 2: the threshold 3 is not all, any or 1 to 1/);
});

describe('an organization wiped alone', () => {
  test('its events and ledger state deleted, new events are not signed: the installation log still holds its checkpoints', async () => {
    const app = await startTestApp({ label: 'wipe-one' });
    try {
      const org = await app.org();
      await write(app, org, 6);
      await eventually('its checkpoint in the installation log', async () => (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body.installation);
      // Stop this instance's memory of the log, as a restart would, then wipe the organization.
      await app.services.integrator.stop();
      const c = app.collections;
      await Promise.all([c.events.deleteMany({ tenant: org.id }), c.ledgerTiles.deleteMany({ tenant: org.id }), c.ledgerCheckpoints.deleteMany({ tenant: org.id }), c.ledgerHeads.deleteMany({ _id: org.id })]);
      const restarted = await startTestApp({ label: 'wipe-one-restart', sharedDbName: app.dbName });
      try {
        await write(restarted, org, 2);
        await eventually('the organization halted', () => Promise.resolve(restarted.services.integrator.haltedReason(org.id)));
        expect(restarted.services.integrator.haltedReason(org.id)).toContain('the installation log holds checkpoints of this log');
        expect(await c.ledgerCheckpoints.countDocuments({ tenant: org.id })).toBe(0);
      } finally {
        await restarted.close();
      }
    } finally {
      await app.close();
    }
  });
});

describe('attacks the witness refuses', () => {
  test('a wiped database restarted under the same key: the witness answers its size, an alarm, and nothing is signed over it', async () => {
    // A witness of its own, that has seen only this installation's history.
    const own = await startWitnessProcess(dir, 'witness.test/wipe', `log ${INSTALLATION_ORIGIN} ${TEST_LEDGER_SIGNER.text}\n`);
    const policy = parsePolicy(`witness w1 ${own.vkey} ${own.url}\nquorum w1\n`);
    const first = await startTestApp({ label: 'wipe-before', witnessPolicy: policy });
    const org = await first.org();
    await write(first, org, 4);
    await witnessedCheckpoint(first, org, 4);
    const held = (JSON.parse(readFileSync(own.statePath, 'utf8')) as { logs: Record<string, { size: number; root: string }> }).logs[INSTALLATION_ORIGIN];
    await first.close(); // drops the database: a wipe

    const second = await startTestApp({ label: 'wipe-after', witnessPolicy: policy });
    try {
      const again = await second.org();
      await write(second, again, 2);
      await eventually('the installation log halted by the witness', () => Promise.resolve(second.services.integrator.haltedReason(INSTALLATION)));
      expect(second.services.integrator.haltedReason(INSTALLATION)).toContain('witness w1');
      const docs = await second.collections.ledgerWitnesses.find({ name: 'w1' }).toArray();
      expect(docs[0]?.alarm).toContain(`cosigned a tree of ${held?.size}`);
      // Nothing was signed over it: no installation checkpoint, and the witness still holds the old history.
      expect(await second.collections.ledgerCheckpoints.countDocuments({ tenant: INSTALLATION })).toBe(0);
      expect((JSON.parse(readFileSync(own.statePath, 'utf8')) as { logs: Record<string, unknown> }).logs[INSTALLATION_ORIGIN]).toEqual(held);
      const cp = await call(`${second.url}/v1/ledger/checkpoint`, { key: again.key });
      expect(cp.body.installation).toBeNull();
      // `ledger audit` fails on it.
      const findings = await auditInstallation(new LedgerStore(second.collections), new WitnessStore(second.collections), TEST_LEDGER_SIGNER);
      expect(findings.map((f) => f.kind)).toContain('witness');
    } finally {
      await second.close();
      await own.stop();
    }
  });

  test('a split view: two copies of one database sign different histories; the witness cosigns one, the other raises the alarm', async () => {
    // A fresh witness, so the history the copies share starts here.
    const own = await startWitnessProcess(dir, 'witness.test/split', `log ${INSTALLATION_ORIGIN} ${TEST_LEDGER_SIGNER.text}\n`);
    const policy = parsePolicy(`witness w ${own.vkey} ${own.url}\nquorum w\n`);
    const a = await startTestApp({ label: 'split-a', witnessPolicy: policy });
    try {
      const org = await a.org();
      await write(a, org, 3);
      await witnessedCheckpoint(a, org, 3);
      await a.services.integrator.stop();
      await a.services.witnesses?.settled();
      // The copy: every collection, as a backup restored elsewhere would have it.
      const copyName = `${a.dbName}-copy`;
      // Not through the app's client, whose queries are checked against the service's indexes.
      const admin = await new MongoClient(mongoUri()).connect();
      const copy = admin.db(copyName);
      for (const info of await admin.db(a.dbName).listCollections().toArray()) {
        const docs = await admin.db(a.dbName).collection(info.name).find({}).toArray();
        if (docs.length) await copy.collection(info.name).insertMany(docs);
      }
      const b = await startTestApp({ label: 'split-b', witnessPolicy: policy, sharedDbName: copyName });
      try {
        a.services.integrator.start();
        // Each copy gets other events for the same organization: two histories.
        await Promise.all([write(a, org, 2), write(b, org, 5)]);
        const alarmed = await eventually('one copy alarmed', async () => {
          const [da, db] = await Promise.all([a.collections.ledgerWitnesses.findOne({}), b.collections.ledgerWitnesses.findOne({})]);
          return da?.alarm ? 'a' : db?.alarm ? 'b' : null;
        });
        const victim = alarmed === 'a' ? a : b;
        const other = alarmed === 'a' ? b : a;
        expect((await victim.collections.ledgerWitnesses.findOne({}))?.alarm).toMatch(/another (tree|history)/);
        await eventually('the alarmed copy halted', () => Promise.resolve(victim.services.integrator.haltedReason(INSTALLATION)));
        // The witness holds the other copy's history.
        const held = (JSON.parse(readFileSync(own.statePath, 'utf8')) as { logs: Record<string, { size: number; root: string }> }).logs[INSTALLATION_ORIGIN];
        expect(await other.collections.ledgerCheckpoints.findOne({ tenant: INSTALLATION, size: held?.size, root: held?.root })).not.toBeNull();
        expect(await victim.collections.ledgerCheckpoints.findOne({ tenant: INSTALLATION, size: held?.size, root: held?.root })).toBeNull();
      } finally {
        await b.close();
        await copy.dropDatabase();
        await admin.close();
      }
    } finally {
      await a.close();
      await own.stop();
    }
  });
});
