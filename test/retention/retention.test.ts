/**
 * Retention and erasure that the ledger proves (README, "Retention and erasure"): with a moved clock,
 * an owner's policy takes effect after its notice, the prune job removes what it allows and records a
 * prune entry; an owner erases an actor's events; legal holds keep what they cover. `cli verify` on a
 * full export, `ledger audit` on the database and the Go verifier (with Tessera's fsck over the entry
 * bundles) accept what an entry covers and name anything else as missing without authority: a body
 * deleted in the database, a prune that claims more than the policy allows, a prune inside the notice.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { eventCommitment, eventSha256 } from '../../src/domain/ledger/eventHash';
import { hashInputOfEvent } from '../../src/domain/eventFields';
import { DAY_MS, RETENTION_ACTIONS } from '../../src/domain/retention';
import { LIVE, type TombstoneDoc } from '../../src/db/documents';
import type { TEvent } from '../../src/domain/event';
import { call, eventBody, eventually } from '../helpers/api';
import { goProgram } from '../helpers/goPrograms';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from '../helpers/harness';
import { runCli, testLedgerKeyFile } from '../helpers/processes';
import { failure, uniqueEmail, WebSession } from '../helpers/webSession';
import { webhookItems, webhookReceiver } from '../helpers/streamReceivers';

const run = promisify(execFile);
const vkey = TEST_LEDGER_SIGNER.text;
/** The test's clock: moved forward by whole days. */
let now = Date.UTC(2026, 0, 5, 12);
const advance = (days: number) => { now += days * DAY_MS; };
let app: TestApp;
let dir: string;
let goVerifier: string;
let env: Record<string, string>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'retention-'));
  // Built once per source tree (globalSetup; here only if that build failed).
  goVerifier = await goProgram('verifier');
  // The prune job runs when the test says (0: no timer); notice 7 days, policies of 30 days and more.
  app = await startTestApp({ label: 'retention', clock: { now: () => new Date(now) }, env: { RETENTION_PRUNE_INTERVAL_MS: '0' } });
  env = { MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName, LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile() };
}, 660_000);
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await app.close();
});

/** A new organization with its owner signed in, and an API key. */
async function ownedOrg(): Promise<{ owner: WebSession; email: string; org: TestOrg }> {
  const owner = new WebSession(app.url);
  const email = uniqueEmail('owner');
  await owner.signup(email, 'correct horse battery staple', 'Retained');
  const me = await owner.client.account.me.query();
  const id = (me as { organization: { id: string } }).organization.id;
  const key = await app.key(id);
  return { owner, email, org: { id, key: key.key, keyId: key.keyId } };
}

/** Writes `count` events and waits until a checkpoint covers them; returns them as written. */
async function write(org: TestOrg, count: number, actor: (i: number) => string = (i) => `user_${i}`): Promise<{ events: TEvent[]; salts: string[] }> {
  const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: count }, (_, i) => eventBody({ actor: { id: actor(i), email: `${actor(i)}@example.com` } })) } });
  expect(res.status).toBe(201);
  const events = res.body.events as TEvent[];
  expect((await call(`${app.url}/v1/events/${(events.at(-1) as TEvent).id}/proof`, { key: org.key })).status).toBe(200);
  return { events, salts: (res.body.ledger as { salt: string }[]).map((r) => r.salt) };
}

/** The whole log exported with its proofs sidecar, and `cli verify` on it. */
async function exportAndVerify(org: TestOrg, name: string): Promise<{ code: number; stdout: string; events: TEvent[] }> {
  // Every event stored must be in a checkpoint first (the export pins the newest one).
  await app.services.integrator.integrate(org.id, { storedTo: await app.collections.events.countDocuments({ tenant: org.id }) });
  const out = join(dir, `${name}.json`);
  const exported = await runCli(['export', '--url', app.url, '--key', org.key, '--out', out, '--with-proofs'], {});
  expect(exported.code).toBe(0);
  const verified = await runCli(['verify', '--verifier-key', vkey, '--events', out, '--proofs', `${out}.proofs.json`], {});
  return { ...verified, events: JSON.parse(readFileSync(out, 'utf8')) as TEvent[] };
}

async function ledgerAudit(org: TestOrg): Promise<{ code: number; report: { removed: { pruned: number; erased: number }; findings: { kind: string; leaf_index?: number; detail: string }[] } }> {
  const res = await runCli(['ledger', 'audit', '--org', org.id, '--verifier-key', vkey, '--json'], env);
  return { code: res.code, report: (JSON.parse(res.stdout) as { reports: never[] }).reports[0] as never };
}

async function goVerify(org: TestOrg, ...args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(goVerifier, ['-url', app.url, '-key', org.key, '-vkey', vkey, ...args]);
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, stdout: failed.stdout };
  }
}

/** The service's own record, as a compromised service or operator with the database would write one. */
function forgedEntry(org: TestOrg, action: string, metadata: Record<string, unknown>) {
  return app.services.selfAudit.record(org.id, { type: 'service', job: 'retention' }, action as never, { type: 'retention_policy', id: org.id }, metadata);
}

/** The sequence numbers of the organization's events still stored (tombstones left out). */
const seqsOf = async (org: TestOrg) => (await app.collections.events.find({ tenant: org.id, ...LIVE }).toArray()).map((doc) => doc.seq).sort((a, b) => a - b);

test('pruning by time: the policy takes effect after its notice, the job prunes what it allows, and every verifier accepts the log', async () => {
  const { owner, email, org } = await ownedOrg();
  const old = await write(org, 60);
  // Outside the installation's bounds: refused.
  expect(await failure(owner.client.dashboard.retention.setPolicy.mutate({ days: 5 }))).toEqual({ status: 400, code: 'VALIDATION_FAILED', message: 'Invalid request: days must be at least 30' });
  // The first policy is shorter than "for ever": it waits for the 7 days' notice.
  const set = await owner.client.dashboard.retention.setPolicy.mutate({ days: 30 });
  expect(set).toMatchObject({ days: null, pending: { days: 30, effective_at: new Date(now + 7 * DAY_MS).toISOString() }, notice_days: 7 });

  advance(10);
  const recent = await write(org, 25);
  advance(25); // the first 60 events are 35 days old, the 25 ten days younger than the cutoff
  await owner.login(email); // sessions idle out after a day
  const before = await app.collections.events.countDocuments({ tenant: org.id, ...LIVE });
  const pruned = await app.services.retention.prune(org.id);
  // The 60 events, and the owner's sign-up records that came before them; never the policy entry.
  expect(pruned.pruned).toBeGreaterThanOrEqual(60);
  expect(pruned.entries).toHaveLength(1);
  const remaining = await app.collections.events.find({ tenant: org.id, ...LIVE }).toArray();
  expect(remaining).toHaveLength(before - pruned.pruned + 1);
  expect(remaining.some((doc) => doc.action === RETENTION_ACTIONS.policyChanged)).toBe(true);
  for (const event of old.events) expect(remaining.some((doc) => doc._id === event.id)).toBe(false);
  for (const event of recent.events) expect(remaining.some((doc) => doc._id === event.id)).toBe(true);
  // Its entry names the range, the cutoff and the policy in force.
  const entry = remaining.find((doc) => doc.action === RETENTION_ACTIONS.pruned);
  expect(JSON.parse(entry?.metadata ?? '{}')).toMatchObject({ count: pruned.pruned, cutoff: new Date(now - 30 * DAY_MS).toISOString(), policy_days: 30, held: 0 });
  // A second run finds nothing more.
  expect((await app.services.retention.prune(org.id)).pruned).toBe(0);

  // Lists and exports say what went.
  const page = await call(`${app.url}/v1/events?limit=5`, { key: org.key });
  expect(page.body.removed).toEqual({ pruned: pruned.pruned, erased: 0, pruned_before: new Date(now - 30 * DAY_MS).toISOString(), policy_days: 30 });
  const csv = await fetch(`${app.url}/v1/events/export?format=csv`, { headers: { authorization: `Bearer ${org.key}` } });
  expect(csv.headers.get('audit-ledger-removed-events')).toBe(`pruned=${pruned.pruned}; erased=0; pruned_before=${new Date(now - 30 * DAY_MS).toISOString()}; policy_days=30`);
  await csv.text();

  // cli verify on the whole log: every missing event is covered by the prune entry.
  const verified = await exportAndVerify(org, 'pruned');
  expect(verified.stdout).toContain(`ok    ${pruned.pruned} events pruned under the retention policy and 0 erased on request, each covered by a later retention entry of the log`);
  expect(verified.stdout).not.toContain('FAIL');
  expect(verified.code).toBe(0);
  // ledger audit on the database: no finding, the removed events counted.
  const audited = await ledgerAudit(org);
  expect(audited.report.findings).toEqual([]);
  expect(audited.report.removed).toEqual({ pruned: pruned.pruned, erased: 0 });
  expect(audited.code).toBe(0);
  // The Go verifier: the remaining events' proofs, and Tessera's fsck rebuilds every tile from the
  // entry bundles, where pruned events are served from their kept leaves.
  const go = await goVerify(org, '-events', '30', '-fsck');
  expect(go.stdout).not.toContain('FAIL');
  expect(go.stdout).toContain('Tessera fsck: every tile');
  expect(go.code).toBe(0);

  // A pruned event's leaf, served in its entry bundle, does not confirm a guess of its content.
  const [first] = old.events as [TEvent];
  const size = (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body.tree_size as number;
  const served = await fetch(`${app.url}/v1/ledger/log/tile/entries/000${size < 256 ? `.p/${size}` : ''}`, { headers: { authorization: `Bearer ${org.key}` } });
  expect(served.status).toBe(200);
  const bundle = Buffer.from(await served.arrayBuffer()).toString('latin1');
  const guess = hashInputOfEvent(first);
  expect(bundle).not.toContain(eventSha256(guess));
  expect(bundle).not.toContain(eventCommitment(guess, '00'.repeat(32)));
  // Only with the salt (deleted with the event; this test kept the receipt) does the guess match.
  expect(bundle).toContain(eventCommitment(guess, old.salts[0] as string));
  // Each pruned event left its tombstone: its id, number and leaf, no body, no salt.
  const tombstones = await app.collections.eventSlots.find({ tenant: org.id, removed: { $exists: true } }).toArray();
  expect(tombstones).toHaveLength(pruned.pruned);
  for (const tombstone of tombstones) expect(Object.keys(tombstone).sort()).toEqual(['_id', 'leaf', 'leaf_v', 'mac', 'month', 'month_seq', 'removed', 'removed_by', 'seq', 'tenant']);

  // A body deleted in the database with no prune entry: missing without authority, named.
  const victim = (remaining.find((doc) => doc.actor_id === 'user_7') as { seq: number }).seq;
  await app.collections.events.deleteOne({ tenant: org.id, seq: victim });
  const tampered = await exportAndVerify(org, 'tampered');
  expect(tampered.code).toBe(1);
  expect(tampered.stdout).toContain(`FAIL  missing without authority: the export lacks the events at sequence numbers ${victim} of the signed tree`);
  const auditedAgain = await ledgerAudit(org);
  expect(auditedAgain.code).toBe(1);
  expect(auditedAgain.report.findings).toEqual([expect.objectContaining({ kind: 'deleted', leaf_index: victim - 1, detail: expect.stringContaining('missing without authority') })]);
}, 120_000);

test('erasure of an actor across many events: only theirs go, held ones stay, and the entry holds no personal data', async () => {
  const { owner, email, org } = await ownedOrg();
  // alice, bob and carol take turns; carol is on legal hold.
  const names = ['alice', 'bob', 'carol'];
  await write(org, 90, (i) => names[i % 3] as string);
  await owner.client.dashboard.retention.placeHold.mutate({ filter: { actor_id: 'carol' }, reason: 'litigation 2026-17' });

  const erased = await owner.client.dashboard.retention.erase.mutate({ actor_id: 'alice', reason: 'data_subject_request' });
  expect(erased).toMatchObject({ erased: 30, held: 0 });
  const held = await owner.client.dashboard.retention.erase.mutate({ actor_id: 'carol', reason: 'data_subject_request' });
  // Everything it met was held: nothing erased, and the request is in the log all the same (issue 34, item 4).
  expect(held).toMatchObject({ erased: 0, held: 30, entries: [expect.any(Number)] });
  const heldEntry = await app.collections.events.findOne({ tenant: org.id, seq: held.entries[0] });
  expect(heldEntry).toMatchObject({ action: RETENTION_ACTIONS.erased });
  expect(JSON.parse(heldEntry?.metadata ?? '{}')).toMatchObject({ ranges: '', count: 0, held: 30, reason: 'data_subject_request' });
  const stored = await app.collections.events.find({ tenant: org.id, ...LIVE }).toArray();
  expect(stored.filter((doc) => doc.actor_id === 'alice')).toHaveLength(0);
  expect(stored.filter((doc) => doc.actor_id === 'bob')).toHaveLength(30);
  expect(stored.filter((doc) => doc.actor_id === 'carol')).toHaveLength(30);
  // The entry: which sequence numbers, by whom (the owner), why (a code): never alice's data.
  const entry = stored.find((doc) => doc.seq === erased.entries[0]);
  expect(entry).toMatchObject({ actor_id: expect.any(String), actor_email: email });
  expect(JSON.parse(entry?.metadata ?? '{}')).toMatchObject({ count: 30, reason: 'data_subject_request', held: 0, role: 'owner' });
  expect(JSON.stringify(entry)).not.toContain('alice');

  // The actor's filter now lists nothing, and says why.
  const list = await call(`${app.url}/v1/events?actor_id=alice`, { key: org.key });
  expect(list.status).toBe(200);
  expect(list.body.data).toEqual([]);
  expect(list.body.removed).toMatchObject({ erased: 30, pruned: 0 });
  const verified = await exportAndVerify(org, 'erased');
  expect(verified.stdout).toContain('ok    0 events pruned under the retention policy and 30 erased on request');
  expect(verified.code).toBe(0);
  expect((await ledgerAudit(org)).report).toMatchObject({ findings: [], removed: { pruned: 0, erased: 30 } });

  // A hold on the whole organization stops erasure outright; viewers and admins may not erase at all.
  await owner.client.dashboard.retention.placeHold.mutate({ filter: {}, reason: 'regulator inquiry' });
  expect(await failure(owner.client.dashboard.retention.erase.mutate({ actor_id: 'bob', reason: 'data_subject_request' }))).toMatchObject({ status: 409, code: 'LEGAL_HOLD' });
  const view = await owner.client.dashboard.retention.view.query();
  expect(view.holds).toHaveLength(2);
  await owner.client.dashboard.retention.releaseHold.mutate({ id: (view.holds.find((h) => Object.keys(h.filter).length === 0) as { id: string }).id });
  expect((await owner.client.dashboard.retention.erase.mutate({ event_ids: [(stored.find((doc) => doc.actor_id === 'bob') as { _id: string })._id], reason: 'legal_obligation' })).erased).toBe(1);
  expect((await exportAndVerify(org, 'erased2')).code).toBe(0);
}, 120_000);

test('with the database: a deleted tombstone, an erased event put back, a tombstone naming another entry are each found', async () => {
  const { owner, org } = await ownedOrg();
  const written = await write(org, 12, (i) => (i % 3 === 0 ? 'subject' : `user_${i}`));
  const erased = await owner.client.dashboard.retention.erase.mutate({ actor_id: 'subject', reason: 'data_subject_request' });
  expect(erased.erased).toBe(4);
  advance(1); // past the time a removal may be under way
  expect((await ledgerAudit(org)).report.findings).toEqual([]);
  const tombstones = await app.collections.eventSlots.find({ tenant: org.id, removed: { $exists: true } }).sort({ seq: 1 }).toArray();
  const [gone, back, renamed] = tombstones as [TombstoneDoc, TombstoneDoc, TombstoneDoc];

  // A tombstone deleted: its number holds nothing, which no entry explains (a restart could give it out again).
  await app.collections.eventSlots.deleteOne({ tenant: org.id, _id: gone._id });
  // An erased event put back at its number, with its salt (this test kept the receipt).
  const original = written.events.find((event) => event.id === back._id) as TEvent;
  const index = written.events.indexOf(original);
  await app.collections.eventSlots.replaceOne({ tenant: org.id, _id: back._id }, {
    _id: original.id, tenant: org.id, seq: back.seq, month: back.month, month_seq: back.month_seq, received_at: new Date(now), ts: new Date(original.timestamp),
    actor_id: original.actor_id, actor_name: original.actor_name, actor_email: original.actor_email, action: original.action, resource_type: original.resource_type,
    resource_id: original.resource_id, resource_name: original.resource_name, organization_id: original.organization_id, metadata: JSON.stringify(original.metadata),
    api_key_id: original.api_key_id, salt: written.salts[index] as string,
  } as never);
  // A tombstone that names an entry which did not remove it.
  await app.collections.eventSlots.updateOne({ tenant: org.id, _id: renamed._id }, { $set: { removed: 'pruned', removed_by: 1 } });

  const audited = await ledgerAudit(org);
  expect(audited.code).toBe(1);
  expect(audited.report.findings).toEqual(expect.arrayContaining([
    expect.objectContaining({ kind: 'deleted', leaf_index: gone.seq - 1, detail: expect.stringContaining('holds no tombstone') }),
    expect.objectContaining({ kind: 'retention', leaf_index: back.seq - 1, detail: expect.stringContaining('yet its event is stored there') }),
    expect.objectContaining({ kind: 'retention', leaf_index: renamed.seq - 1, detail: expect.stringContaining('which does not remove it') }),
    // Put back without the key file, the event has no valid MAC: the service never serves it again.
    expect.objectContaining({ kind: 'foreign', leaf_index: back.seq - 1, event_id: back._id }),
    // A tombstone changed behind the service's back is foreign too.
    expect.objectContaining({ kind: 'foreign', leaf_index: renamed.seq - 1 }),
  ]));
  const verified = await exportAndVerify(org, 'tombstones');
  expect(verified.stdout).not.toContain(original.id);
  expect((await call(`${app.url}/v1/events/${original.id}`, { key: org.key })).status).toBe(404);
}, 120_000);

test('held events are not pruned, and the prune entry says how many were kept', async () => {
  const { owner, org } = await ownedOrg();
  await owner.client.dashboard.retention.setPolicy.mutate({ days: 30 });
  await write(org, 20, (i) => (i < 5 ? 'kept' : 'gone'));
  await owner.client.dashboard.retention.placeHold.mutate({ filter: { actor_id: 'kept' }, reason: 'investigation' });
  advance(40);
  const pruned = await app.services.retention.prune(org.id);
  expect(pruned.held).toBe(5);
  expect(await app.collections.events.countDocuments({ tenant: org.id, actor_id: 'kept' })).toBe(5);
  expect(await app.collections.events.countDocuments({ tenant: org.id, actor_id: 'gone' })).toBe(0);
  expect((await exportAndVerify(org, 'held')).code).toBe(0);
  // An operator's reseal of the pruned log takes the removed events' leaves from those kept: the same tree.
  const newest = (await seqsOf(org)).at(-1) as number;
  await app.services.integrator.integrate(org.id, { storedTo: newest });
  const before = (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body as { tree_size: number; root_hash: string };
  expect(before.tree_size).toBe(newest);
  const resealed = await app.services.integrator.reseal(org.id);
  expect(resealed).toMatchObject({ anchor: before.tree_size, size: before.tree_size, planted: 0 });
  expect((await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body.root_hash).toBe(before.root_hash);
}, 120_000);

test('a prune entry that claims more than the policy allows fails verification', async () => {
  const { owner, org } = await ownedOrg();
  await owner.client.dashboard.retention.setPolicy.mutate({ days: 60 });
  advance(8);
  await write(org, 10);
  advance(1);
  // Events 1 day old, "pruned" by an entry whose cutoff is now: the 60-day policy allows nothing so recent.
  const victims = (await seqsOf(org)).slice(-10);
  const ranges = `${victims[0]}-${victims.at(-1)}`;
  await forgedEntry(org, RETENTION_ACTIONS.pruned, { ranges, count: 10, cutoff: new Date(now).toISOString(), policy_days: 60, held: 0 });
  await app.collections.events.deleteMany({ tenant: org.id, seq: { $in: victims } });
  const verified = await exportAndVerify(org, 'overreach');
  expect(verified.code).toBe(1);
  expect(verified.stdout).toMatch(/FAIL {2}retention entry at sequence number \d+ \(audit_ledger\.retention\.pruned\): its cutoff .* is later than the 60-day policy allows/);
  expect(verified.stdout).toContain(`FAIL  missing without authority: the export lacks the events at sequence numbers ${ranges} of the signed tree`);
  const { findings } = (await ledgerAudit(org)).report;
  expect(findings.map((f) => f.kind).sort()).toEqual([...Array(10).fill('deleted'), 'retention']);
}, 120_000);

test('a policy shortened and pruned inside its notice period fails verification; the service itself waits', async () => {
  const { owner, email, org } = await ownedOrg();
  await owner.client.dashboard.retention.setPolicy.mutate({ days: 365 });
  advance(8);
  const { events } = await write(org, 12);
  advance(100); // the events are 100 days old; 365 days are in force
  // Shortened to 30 days: in force only in 7 days, so the job prunes nothing now.
  await owner.login(email);
  const shortened = await owner.client.dashboard.retention.setPolicy.mutate({ days: 30 });
  expect(shortened).toMatchObject({ days: 365, pending: { days: 30 } });
  advance(2);
  expect((await app.services.retention.prune(org.id)).pruned).toBe(0);
  // A prune under the pending policy, written behind the service's back, with the bodies deleted.
  const ids = new Set(events.slice(0, 6).map((event) => event.id));
  const victims = (await app.collections.events.find({ tenant: org.id }).toArray()).filter((doc) => ids.has(doc._id)).map((doc) => doc.seq).sort((x, y) => x - y);
  const ranges = `${victims[0]}-${victims.at(-1)}`;
  await forgedEntry(org, RETENTION_ACTIONS.pruned, { ranges, count: victims.length, cutoff: new Date(now - 30 * DAY_MS).toISOString(), policy_days: 30, held: 0 });
  await app.collections.events.deleteMany({ tenant: org.id, seq: { $in: victims } });
  const verified = await exportAndVerify(org, 'notice');
  expect(verified.code).toBe(1);
  expect(verified.stdout).toMatch(/FAIL {2}retention entry at sequence number \d+ \(audit_ledger\.retention\.pruned\): claims a 30-day policy, but the policy in force was 365 days/);
  expect(verified.stdout).toContain('FAIL  missing without authority');

  // After the notice, the job prunes under the 30-day policy, and that verifies.
  advance(6);
  const later = await app.services.retention.prune(org.id);
  expect(later.pruned).toBeGreaterThan(0);
  const { report } = await ledgerAudit(org);
  expect(report.removed.pruned).toBe(later.pruned);
}, 120_000);

test('an entry sent by a client is no authority, and only owners manage retention', async () => {
  const { owner, org } = await ownedOrg();
  await write(org, 5);
  // A client's event with the service's action is refused now (the namespace is reserved); one stored by
  // an older version (its action changed here in the database) has the client's api_key_id: it covers nothing.
  const body = eventBody({ action: RETENTION_ACTIONS.erased, metadata: { ranges: '2-3', count: 2, reason: 'data_subject_request', held: 0, actor_type: 'member', role: 'owner' } });
  expect((await call(`${app.url}/v1/events`, { key: org.key, body })).status).toBe(400);
  const forged = await call(`${app.url}/v1/events`, { key: org.key, body: { ...body, action: 'user.erased' } });
  expect(forged.status).toBe(201);
  await app.collections.events.updateOne({ _id: forged.body.event.id as string, tenant: org.id }, { $set: { action: RETENTION_ACTIONS.erased } });
  const victims = (await seqsOf(org)).slice(1, 3);
  await app.collections.events.deleteMany({ tenant: org.id, seq: { $in: victims } });
  const verified = await exportAndVerify(org, 'client');
  expect(verified.code).toBe(1);
  expect(verified.stdout).toContain(`FAIL  missing without authority: the export lacks the events at sequence numbers ${victims[0]}-${victims[1]}`);

  // An admin may not erase or change the policy.
  const admin = new WebSession(app.url);
  const adminEmail = uniqueEmail('admin');
  const invite = await owner.client.dashboard.members.invite.mutate({ email: adminEmail, role: 'admin' });
  await admin.client.account.acceptInvitation.mutate({ token: invite.token, password: 'correct horse battery staple' });
  expect(await failure(admin.client.dashboard.retention.erase.mutate({ actor_id: 'user_1', reason: 'data_subject_request' }))).toMatchObject({ status: 403, code: 'INSUFFICIENT_ROLE' });
  expect(await failure(admin.client.dashboard.retention.setPolicy.mutate({ days: 30 }))).toMatchObject({ status: 403, code: 'INSUFFICIENT_ROLE' });
  expect((await admin.client.dashboard.retention.view.query()).days).toBeNull();
}, 120_000);

test('a stream from the first event skips what was removed, and stream verify accepts the gap its entries explain', async () => {
  const { owner, email, org } = await ownedOrg();
  await owner.client.dashboard.retention.setPolicy.mutate({ days: 30 });
  await write(org, 20);
  advance(40);
  await owner.login(email);
  const pruned = await app.services.retention.prune(org.id);
  expect(pruned.pruned).toBeGreaterThanOrEqual(20);
  await write(org, 5);
  let secret = '';
  const receiver = await webhookReceiver(() => secret).start();
  try {
    const created = await call(`${app.url}/v1/streams`, { key: org.key, body: { name: 'from the start', destination: { type: 'webhook', url: receiver.url }, start_seq: 1 } });
    expect(created.status).toBe(201);
    secret = created.body.signing_secret as string;
    const size = await eventually('every signed event delivered or skipped', async () => {
      const checkpoint = (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body as { tree_size: number; checkpoint: string };
      const stream = (await call(`${app.url}/v1/streams/${created.body.id as string}`, { key: org.key })).body as { delivered_seq: number };
      return stream.delivered_seq >= checkpoint.tree_size ? checkpoint : null;
    });
    const items = webhookItems(receiver);
    const seqs = new Set(items.map((item) => (item.receipt.leaf_index as number) + 1));
    expect([...seqs].length).toBe(size.tree_size - pruned.pruned);
    // What an S3 stream stores: the items as JSON lines, and the batch's checkpoint.
    const delivered = join(dir, 'stream');
    mkdirSync(delivered, { recursive: true });
    writeFileSync(join(delivered, 'batch.jsonl'), [...items.map((item) => JSON.stringify(item)), JSON.stringify({ audit_ledger_checkpoint: { note: size.checkpoint } })].join('\n'));
    const verified = await runCli(['stream', 'verify', '--verifier-key', vkey, delivered], {});
    expect(verified.stdout).toContain(`removed under retention entries of the log, skipped`);
    expect(verified.code).toBe(0);
    // The same delivery with an event taken out that no entry removed: a gap, named.
    const dropped = items.findIndex((item) => item.event.action === 'user.role_changed');
    const kept = items.filter((_, i) => i !== dropped);
    writeFileSync(join(delivered, 'batch.jsonl'), [...kept.map((item) => JSON.stringify(item)), JSON.stringify({ audit_ledger_checkpoint: { note: size.checkpoint } })].join('\n'));
    const gapped = await runCli(['stream', 'verify', '--verifier-key', vkey, delivered], {});
    expect(gapped.stdout).toContain('1 sequence number(s) between');
    expect(gapped.code).toBe(1);
  } finally {
    await receiver.stop();
  }
}, 120_000);

test('the prune job is one at a time per organization across instances', async () => {
  const { owner, org } = await ownedOrg();
  await owner.client.dashboard.retention.setPolicy.mutate({ days: 30 });
  await write(org, 40);
  advance(40);
  const [a, b] = await Promise.all([app.services.retention.prune(org.id), app.services.retention.prune(org.id)]);
  // One ran; the other found the lease taken (or, run after it, nothing left).
  expect(a.pruned + b.pruned).toBeGreaterThanOrEqual(40);
  expect(Math.min(a.pruned, b.pruned)).toBe(0);
  await eventually('a verifiable log', async () => ((await exportAndVerify(org, 'twice')).code === 0 ? true : null));
}, 120_000);
