/**
 * Trust at rest: rows written into the database behind the service's back, by someone who can write
 * the database but cannot read the signing key file, and so cannot make a row's MAC. Each test is one
 * such attack on a running service (the ledger on), and asserts what the issue requires: a foreign row
 * is never signed, never the writer's newest event, never an answer, never retention authority; it is
 * moved aside when it takes a number the service needs, named (log line, metric), and a proof of it is
 * a 404. Genuine writes around it are answered, numbered without gaps, and signed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { v7 as uuidv7 } from 'uuid';
import { collections, type Collections } from '../../src/db/database';
import { type EventDoc, toEvent } from '../../src/db/documents';
import { importVerifier, verifyEventInclusion, type WebVerifier } from '../../src/client/webVerify';
import { RETENTION_ACTIONS } from '../../src/domain/retention';
import { checkRetention, logEntryOf } from '../../src/client/retentionCheck';
import { SELF_AUDIT_KEY_ID } from '../../src/domain/selfAudit';
import { call, eventBody } from '../helpers/api';
import { mongoUri, startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg, uniqueDbName } from '../helpers/harness';
import { runCli, testLedgerKeyFile } from '../helpers/processes';

const vkey = TEST_LEDGER_SIGNER.text;
let dir: string;
let verifier: WebVerifier;
/** The attacker's own connection to the database server (the app's client checks its own queries' indexes). */
let attacker: MongoClient;
/** Databases of the restart tests, which the apps there do not drop. */
const shared: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'foreign-rows-'));
  verifier = await importVerifier(vkey);
  attacker = await MongoClient.connect(mongoUri());
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  for (const name of shared) await attacker.db(name).dropDatabase().catch(() => undefined);
  await attacker.close();
});

/** A service with its log lines kept: on its own database, or (restart tests) on `sharedDbName`. */
async function start(label: string, sharedDbName?: string): Promise<{ app: TestApp; logs: string[]; c: Collections }> {
  const logs: string[] = [];
  const app = await startTestApp({ label, sharedDbName, logTo: { write: (line: string) => { logs.push(line); } } });
  return { app, logs, c: collections(attacker.db(app.dbName)) };
}

/** `count` events in one batch; returns their ids, once the newest is in a signed checkpoint. */
async function writeSigned(app: TestApp, org: TestOrg, count: number, label = 'g'): Promise<string[]> {
  const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: count }, (_, i) => eventBody({ actor: { id: `${label}${i}` } })) } });
  expect(res.status).toBe(201);
  const ids = (res.body.events as { id: string }[]).map((e) => e.id);
  const proof = await call(`${app.url}/v1/events/${ids.at(-1)}/proof`, { key: org.key });
  expect([proof.status, proof.text]).toEqual([200, expect.any(String)]);
  return ids;
}

/** One genuine event through POST /v1/events: its status, id and the leaf index its receipt names. */
async function writeOne(app: TestApp, org: TestOrg, actor: string): Promise<{ status: number; id: string; leaf: number; text: string }> {
  const res = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ actor: { id: actor } }) });
  return { status: res.status, id: res.body?.event?.id, leaf: res.body?.ledger?.leaf_index, text: res.text };
}

/** The organization's newest stored row (by sequence number), read behind the service's back. */
async function newestRow(c: Collections, tenant: string): Promise<EventDoc> {
  const [doc] = await c.events.find({ tenant }).sort({ seq: -1 }).limit(1).toArray();
  if (!doc) throw new Error(`no events for ${tenant}`);
  return doc;
}

/**
 * A forged event as a database writer makes it: a real event's document shape at `seq`, a real key's id
 * (the template's), a fresh salt, a new UUIDv7 id, and no MAC (or `mac`, copied from another row).
 */
function forgedFrom(template: EventDoc, seq: number, changes: Partial<EventDoc> = {}, mac?: string): EventDoc {
  const { mac: _genuine, ...shape } = template;
  return { ...shape, _id: uuidv7(), seq, salt: randomBytes(32).toString('hex'), actor_id: 'mallory', actor_name: 'Mallory', ...changes, ...(mac === undefined ? {} : { mac }) };
}

/** GET /v1/events/:id/proof of a genuine event, checked with the repository's own verifier: its failures (empty: proven). */
async function proven(app: TestApp, org: TestOrg, id: string): Promise<{ status: number; failures: string[]; treeSize: number; leaf: number }> {
  const proof = await call(`${app.url}/v1/events/${id}/proof`, { key: org.key });
  if (proof.status !== 200) return { status: proof.status, failures: [proof.text], treeSize: -1, leaf: -1 };
  const event = await call(`${app.url}/v1/events/${id}`, { key: org.key });
  const { failures } = await verifyEventInclusion(event.body.event ?? event.body, proof.body, verifier);
  return { status: 200, failures, treeSize: proof.body.tree_size, leaf: proof.body.leaf_index };
}

async function checkpointSize(app: TestApp, org: TestOrg): Promise<number> {
  return (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body.tree_size;
}

/** The whole log exported with its proofs (`export --with-proofs`), and `verify` on it. */
async function exportAndVerify(app: TestApp, org: TestOrg, name: string): Promise<{ exported: { code: number; stderr: string }; code: number; stdout: string; ids: string[] }> {
  const out = join(dir, `${name}.json`);
  const exported = await runCli(['export', '--url', app.url, '--key', org.key, '--out', out, '--with-proofs'], {});
  if (exported.code !== 0) return { exported, code: -1, stdout: '', ids: [] };
  const verified = await runCli(['verify', '--verifier-key', vkey, '--events', out, '--proofs', `${out}.proofs.json`], {});
  return { exported, ...verified, ids: (JSON.parse(readFileSync(out, 'utf8')) as { id: string }[]).map((e) => e.id) };
}

interface Finding { kind: string; leaf_index?: number; event_id?: string; detail: string }

/** `ledger audit` of one organization, with the installation's key file (its row key) and verifier key. */
async function ledgerAudit(app: TestApp, org: TestOrg): Promise<{ code: number; findings: Finding[]; raw: string }> {
  const res = await runCli(['ledger', 'audit', '--org', org.id, '--verifier-key', vkey, '--json'], {
    MONGODB_DB: app.dbName, LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile(), LEDGER_NAME: TEST_LEDGER_SIGNER.name,
  });
  try {
    const { reports } = JSON.parse(res.stdout) as { reports: { findings: Finding[] }[] };
    return { code: res.code, findings: reports[0]?.findings ?? [], raw: res.stdout };
  } catch {
    return { code: res.code, findings: [], raw: `${res.stdout}\n${res.stderr}` };
  }
}

/** The metrics endpoint's foreign-row counters. */
async function foreignMetrics(app: TestApp): Promise<{ event: number; movedAside: number }> {
  const text = await app.http.metrics.registry.metrics();
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
  return { event: value(/^ledger_foreign_rows_total\{kind="event"\} (\d+)$/m), movedAside: value(/^ledger_foreign_rows_moved_aside_total (\d+)$/m) };
}

/** The ids of the rows in `foreign_rows` (as they were found). */
async function movedAside(c: Collections): Promise<string[]> {
  return (await c.foreignRows.find({}).toArray()).map((doc) => String(doc.row._id));
}

/** The customer's monitor over the organization, remembering in `state` (test/ledger/monitorRollback.test.ts). */
async function monitor(app: TestApp, org: TestOrg, state: string): Promise<{ code: number; stdout: string }> {
  return runCli(['monitor', '--url', app.url, '--key', org.key, '--verifier-key', vkey, '--state', state], {});
}

const namedInLogs = (logs: string[], id: string) => logs.some((line) => line.includes('FOREIGN event row') && line.includes(id));

/**
 * Runs `check` (expectations) and keeps its failure instead of stopping the test there: a test with
 * several independent requirements reports every one that fails (each under `label`), then fails once.
 */
async function soft(problems: string[], label: string, check: () => unknown): Promise<void> {
  try {
    await check();
  } catch (error) {
    problems.push(`${label}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

describe('1. a forged event at the next number', () => {
  test.each([
    ['without a MAC', false],
    ['with a MAC copied from another row', true],
  ])('%s: the genuine write takes the number and is signed; the forged row never is', async (_name, copyMac) => {
    const { app, logs, c } = await start('forged');
    try {
      const org = await app.org();
      await writeSigned(app, org, 5);
      const state = join(dir, `monitor-forged-${copyMac}.json`);
      expect((await monitor(app, org, state)).code).toBe(0);
      const template = await newestRow(c, org.id);
      const next = template.seq + 1;
      const forged = forgedFrom(template, next, {}, copyMac ? template.mac : undefined);
      await c.events.insertOne(forged);

      if (copyMac) {
        // The proof of the forged row is asked while it still holds its number: 404, never 5xx.
        const early = await call(`${app.url}/v1/events/${forged._id}/proof`, { key: org.key });
        expect([early.status, early.text]).toEqual([404, expect.any(String)]);
      }
      const genuine = await writeOne(app, org, 'genuine');
      expect([genuine.status, genuine.text]).toEqual([201, expect.any(String)]);
      expect(genuine.leaf).toBe(next - 1);
      expect((await c.events.findOne({ _id: genuine.id }))?.seq).toBe(next);
      const proof = await proven(app, org, genuine.id);
      expect(proof).toEqual({ status: 200, failures: [], treeSize: next, leaf: next - 1 });

      // The forged row: moved aside, named, counted, never proven.
      expect(await movedAside(c)).toEqual([forged._id]);
      expect(await c.events.findOne({ _id: forged._id })).toBeNull();
      expect(namedInLogs(logs, forged._id)).toBe(true);
      expect(await foreignMetrics(app)).toEqual({ event: 1, movedAside: 1 });
      const late = await call(`${app.url}/v1/events/${forged._id}/proof`, { key: org.key });
      expect([late.status, late.text]).toEqual([404, expect.any(String)]);

      // The signed tree holds the genuine events only: the whole export verifies, without the forged id.
      const verified = await exportAndVerify(app, org, `forged-${copyMac}`);
      expect(verified.exported.code).toBe(0);
      expect(verified.code).toBe(0);
      expect(verified.stdout).toContain(`${next} of ${next} events are in the signed tree of ${next}`);
      expect(verified.ids).not.toContain(forged._id);

      // The log keeps growing.
      const more = await writeSigned(app, org, 3, 'after');
      // (The export added the service's own record of it to the log: every stored row is genuine.)
      expect(await checkpointSize(app, org)).toBe(await c.events.countDocuments({ tenant: org.id }));
      expect(await checkpointSize(app, org)).toBeGreaterThanOrEqual(next + 3);
      expect((await proven(app, org, more.at(-1) as string)).failures).toEqual([]);
      expect((await ledgerAudit(app, org)).code).toBe(0);
      // The customer's monitor: the log only grew, consistently with what it saw before the attack.
      const after = await monitor(app, org, state);
      expect([after.code, after.stdout]).toEqual([0, expect.stringContaining('consistency proof checked')]);
    } finally {
      await app.close();
    }
  });
});

describe('2. a forged retention entry', () => {
  test('is never signed nor authority: events deleted under it are missing without authority', async () => {
    const { app, c } = await start('forgedret');
    try {
      const org = await app.org();
      await writeSigned(app, org, 10);
      const template = await newestRow(c, org.id);
      const next = template.seq + 1;
      // As services/retention.ts writes an erasure entry (services/selfAudit.ts `record`), by an owner.
      const entry = forgedFrom(template, next, {
        action: RETENTION_ACTIONS.erased,
        api_key_id: SELF_AUDIT_KEY_ID,
        actor_id: 'service',
        resource_type: 'erasure',
        resource_id: `erasure_${uuidv7()}`,
        resource_name: null,
        metadata: JSON.stringify({ actor_type: 'member', role: 'owner', ranges: '5-7', count: 3, reason: 'data_subject_request', held: 0 }),
        organization_id: org.id,
        ts: new Date(),
        received_at: new Date(),
      });
      // The forgery is well made: with the service's MAC it would be authority for 5-7.
      const asEntry = logEntryOf(next, toEvent(entry));
      expect(asEntry && checkRetention([asEntry]).authority(6)).toEqual({ kind: 'erased', by: next });
      await c.events.insertOne(entry);
      const deleted = await c.events.deleteMany({ tenant: org.id, seq: { $in: [5, 6, 7] } });
      expect(deleted.deletedCount).toBe(3);

      // The audit, with the forged entry still in place: 5-7 deleted without authority, the forged row named.
      const problems: string[] = [];
      const audited = await ledgerAudit(app, org);
      await soft(problems, 'audit exit code', () => expect(audited.code).toBe(1));
      for (const leaf of [4, 5, 6]) {
        await soft(problems, `audit, leaf ${leaf}`, () => expect(audited.findings.find((f) => f.kind === 'deleted' && f.leaf_index === leaf)?.detail).toContain('missing without authority'));
      }
      await soft(problems, 'audit names the forged entry', () => expect(audited.findings).toContainEqual(expect.objectContaining({ kind: 'foreign', event_id: entry._id })));

      // An export verifies nothing as erased on request; the forged entry is in no export.
      const verified = await exportAndVerify(app, org, 'forged-retention');
      await soft(problems, 'export --with-proofs', () => expect([verified.exported.code, verified.exported.stderr]).toEqual([0, expect.any(String)]));
      await soft(problems, 'verify exit code', () => expect(verified.code).toBe(1));
      await soft(problems, 'verify: no erasure', () => expect(verified.stdout).not.toContain('erased on request'));
      await soft(problems, 'verify: 5-7 missing', () => expect(verified.stdout).toMatch(/missing without authority: the export lacks the events at sequence numbers 5-7 /));
      await soft(problems, 'export without the entry', () => expect(verified.ids).not.toContain(entry._id));

      // Never signed: the service's next own events (the export's record of itself, then a client's) take
      // its number and the next, and are signed there.
      const genuine = await writeOne(app, org, 'genuine');
      await soft(problems, 'genuine write', () => expect(genuine.status).toBe(201));
      await soft(problems, 'genuine proof', async () => expect(await proven(app, org, genuine.id)).toEqual({ status: 200, failures: [], treeSize: expect.any(Number), leaf: genuine.leaf }));
      await soft(problems, 'its number, taken by a genuine row', async () => {
        const at = await c.events.findOne({ tenant: org.id, seq: next });
        expect([at?._id !== entry._id, at?.seq, genuine.leaf <= next]).toEqual([true, next, true]);
      });
      await soft(problems, 'moved aside', async () => expect(await movedAside(c)).toEqual([entry._id]));
      await soft(problems, 'proof of the entry', async () => expect((await call(`${app.url}/v1/events/${entry._id}/proof`, { key: org.key })).status).toBe(404));
      // With it gone, the audit still finds 5-7 deleted without authority, and nothing else.
      const again = await ledgerAudit(app, org);
      await soft(problems, 'audit afterwards', () => expect(again.findings.map((f) => [f.kind, f.leaf_index, f.detail.includes('missing without authority')])).toEqual([['deleted', 4, true], ['deleted', 5, true], ['deleted', 6, true]]));
      expect(problems).toEqual([]);
    } finally {
      await app.close();
    }
  });
});

describe('3. a number squatted while the service runs', () => {
  test('a foreign row at next+5: ten genuine writes, one by one, all 201, consecutive and signed', async () => {
    const { app, logs, c } = await start('squat');
    try {
      const org = await app.org();
      await writeSigned(app, org, 3);
      const state = join(dir, 'monitor-squat.json');
      expect((await monitor(app, org, state)).code).toBe(0);
      const template = await newestRow(c, org.id);
      const base = template.seq;
      const squatter = forgedFrom(template, base + 5);
      await c.events.insertOne(squatter);

      const written: { status: number; id: string; leaf: number; text: string }[] = [];
      for (let i = 0; i < 10; i++) written.push(await writeOne(app, org, `one${i}`));
      expect(written.map((w) => [w.status, w.leaf])).toEqual(Array.from({ length: 10 }, (_, i) => [201, base + i]));
      const seqs = (await c.events.find({ tenant: org.id, _id: { $in: written.map((w) => w.id) } }).toArray()).map((d) => d.seq).sort((a, b) => a - b);
      expect(seqs).toEqual(Array.from({ length: 10 }, (_, i) => base + 1 + i));

      // Every genuine event signed, and only they: the tree has as many leaves as there are genuine events.
      for (const w of written) expect([w.id, await proven(app, org, w.id)]).toEqual([w.id, { status: 200, failures: [], treeSize: expect.any(Number), leaf: w.leaf }]);
      expect(await checkpointSize(app, org)).toBe(base + 10);
      expect(await c.events.countDocuments({ tenant: org.id })).toBe(base + 10);

      expect(await movedAside(c)).toEqual([squatter._id]);
      expect(namedInLogs(logs, squatter._id)).toBe(true);
      expect(await foreignMetrics(app)).toEqual({ event: 1, movedAside: 1 });
      const proof = await call(`${app.url}/v1/events/${squatter._id}/proof`, { key: org.key });
      expect([proof.status, proof.text]).toEqual([404, expect.any(String)]);
      expect((await exportAndVerify(app, org, 'squat')).code).toBe(0);
      const after = await monitor(app, org, state);
      expect([after.code, after.stdout]).toEqual([0, expect.stringContaining('consistency proof checked')]);
    } finally {
      await app.close();
    }
  });
});

describe('4. a number squatted across a restart', () => {
  test.each([3, 1])('a foreign row at next+%i: the restarted service numbers its events on from where it left off, and signs them', async (ahead) => {
    const dbName = uniqueDbName('squatrestart');
    shared.push(dbName);
    let { app, c } = await start('squatrestart', dbName);
    const org = await app.org();
    await writeSigned(app, org, 4);
    await app.close();

    const template = await newestRow(c, org.id);
    const base = template.seq;
    const squatter = forgedFrom(template, base + ahead);
    await c.events.insertOne(squatter);

    const restarted = await start('squatrestart', dbName);
    ({ app, c } = restarted);
    const { logs } = restarted;
    try {
      const written: { status: number; id: string; leaf: number; text: string }[] = [];
      for (let i = 0; i < 6; i++) written.push(await writeOne(app, org, `r${i}`));
      expect(written.map((w) => [w.status, w.leaf])).toEqual(Array.from({ length: 6 }, (_, i) => [201, base + i]));
      const seqs = (await c.events.find({ tenant: org.id, _id: { $in: written.map((w) => w.id) } }).toArray()).map((d) => d.seq).sort((a, b) => a - b);
      expect(seqs).toEqual(Array.from({ length: 6 }, (_, i) => base + 1 + i));
      for (const w of written) expect([w.id, (await proven(app, org, w.id)).failures]).toEqual([w.id, []]);
      expect(await checkpointSize(app, org)).toBe(base + 6);
      expect(await movedAside(c)).toEqual([squatter._id]);
      expect(namedInLogs(logs, squatter._id)).toBe(true);
      expect((await call(`${app.url}/v1/events/${squatter._id}/proof`, { key: org.key })).status).toBe(404);
      expect((await ledgerAudit(app, org)).code).toBe(0);
    } finally {
      await app.close();
    }
  });
});

describe('5. genuine rows copied with their MACs', () => {
  test('moved into another organization (tenant changed, id, number and MAC kept): foreign there', async () => {
    const { app, logs, c } = await start('copied');
    try {
      const a = await app.org({ name: 'A' });
      const b = await app.org({ name: 'B' });
      await writeSigned(app, a, 6, 'a');
      await writeSigned(app, b, 3, 'b');
      const bNext = (await newestRow(c, b.id)).seq + 1;
      const original = await c.events.findOne({ tenant: a.id, seq: bNext });
      if (!original?.mac) throw new Error(`organization A has no sealed event at ${bNext}`);
      // Its _id is unique in the collection: a copy under the same id is a move. organization_id is the
      // client's field (absent here), so the row differs from its genuine self only in `tenant`.
      await c.events.updateOne({ _id: original._id }, { $set: { tenant: b.id } });

      const genuine = await writeOne(app, b, 'b-genuine');
      expect([genuine.status, genuine.leaf]).toEqual([201, bNext - 1]);
      expect(await proven(app, b, genuine.id)).toEqual({ status: 200, failures: [], treeSize: bNext, leaf: bNext - 1 });
      expect(await movedAside(c)).toEqual([original._id]);
      expect(namedInLogs(logs, original._id)).toBe(true);
      expect((await call(`${app.url}/v1/events/${original._id}/proof`, { key: b.key })).status).toBe(404);
      const verified = await exportAndVerify(app, b, 'copied-b');
      expect(verified.code).toBe(0);
      expect(verified.ids).not.toContain(original._id);
    } finally {
      await app.close();
    }
  });

  test('copied within its organization to the next number (content and MAC kept, new id): foreign, moved aside, never signed', async () => {
    const { app, logs, c } = await start('copiedseq');
    try {
      const org = await app.org();
      await writeSigned(app, org, 4);
      const template = await newestRow(c, org.id);
      const next = template.seq + 1;
      const second = await c.events.findOne({ tenant: org.id, seq: 2 });
      if (!second?.mac) throw new Error('no sealed event at 2');
      const copy = { ...second, _id: uuidv7(), seq: next, month_seq: template.month_seq };
      await c.events.insertOne(copy);

      const genuine = await writeOne(app, org, 'genuine');
      expect([genuine.status, genuine.leaf]).toEqual([201, next - 1]);
      expect(await proven(app, org, genuine.id)).toEqual({ status: 200, failures: [], treeSize: next, leaf: next - 1 });
      expect(await movedAside(c)).toEqual([copy._id]);
      expect(namedInLogs(logs, copy._id)).toBe(true);
      expect((await call(`${app.url}/v1/events/${copy._id}/proof`, { key: org.key })).status).toBe(404);
    } finally {
      await app.close();
    }
  });

  test('moved one number up (id and MAC kept): ledger audit names it foreign, and the next genuine event is signed', async () => {
    const { app, c } = await start('movedup');
    try {
      const org = await app.org();
      await writeSigned(app, org, 4);
      const newest = await newestRow(c, org.id);
      const s = newest.seq;
      await c.events.updateOne({ _id: newest._id }, { $set: { seq: s + 1 } });

      const problems: string[] = [];
      const audited = await ledgerAudit(app, org);
      await soft(problems, 'audit exit code', () => expect(audited.code).toBe(1));
      await soft(problems, 'audit findings', () => expect(audited.findings).toEqual(expect.arrayContaining([
        expect.objectContaining({ kind: 'deleted', leaf_index: s - 1 }),
        expect.objectContaining({ kind: 'foreign', event_id: newest._id }),
      ])));

      // The displaced row takes no signed place: the next genuine event is signed where its receipt says.
      const genuine = await writeOne(app, org, 'genuine');
      await soft(problems, 'genuine write', () => expect(genuine.status).toBe(201));
      await soft(problems, 'genuine proof', async () => expect(await proven(app, org, genuine.id)).toEqual({ status: 200, failures: [], treeSize: expect.any(Number), leaf: genuine.leaf }));
      await soft(problems, 'genuine number', () => expect(genuine.leaf).toBeGreaterThanOrEqual(s));
      await soft(problems, 'moved aside', async () => expect(await movedAside(c)).toContain(newest._id));
      expect(problems).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
