/**
 * Retention over REST (README, "Retention over REST"): an API key with `retention:manage`, which only an
 * owner can grant, reads and sets the policy, places, lists and releases legal holds and erases an
 * actor's events under /v1/retention; each change is an entry of the organization's log that names the
 * key as its actor and that `cli verify` and `ledger audit` accept as the authority for what it erased.
 * Keys without the scope (the default three, a key made before scopes existed) get 403; an admin cannot
 * create such a key, nor can the operator's CLI.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RETENTION_ACTIONS } from '../../src/domain/retention';
import type { TEvent } from '../../src/domain/event';
import { call, eventBody } from '../helpers/api';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp } from '../helpers/harness';
import { runCli, testLedgerKeyFile } from '../helpers/processes';
import { failure, uniqueEmail, WebSession } from '../helpers/webSession';

const PASSWORD = 'correct horse battery staple';
let app: TestApp;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'retention-rest-'));
  app = await startTestApp({ label: 'retention_rest', env: { RETENTION_PRUNE_INTERVAL_MS: '0' } });
  env = { MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName, LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile() };
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await app.close();
});

/** An organization with its owner signed in, a writer key (the default scopes) and a `retention:manage` key the owner made. */
async function ownedOrg(): Promise<{ owner: WebSession; orgId: string; writer: string; manager: { key: string; id: string } }> {
  const owner = new WebSession(app.url);
  const view = await owner.signup(uniqueEmail('owner'), PASSWORD, 'Erasing');
  const created = await owner.client.dashboard.keys.create.mutate({ name: 'dsr automation', scopes: ['retention:manage'] });
  expect(created.apiKey.scopes).toEqual(['retention:manage']);
  const writer = await app.key(view.organization.id);
  return { owner, orgId: view.organization.id, writer: writer.key, manager: { key: created.key, id: created.apiKey.id } };
}

async function write(key: string, actors: string[]): Promise<TEvent[]> {
  const res = await call(`${app.url}/v1/events/batch`, { key, body: { events: actors.map((id) => eventBody({ actor: { id, email: `${id}@example.com` } })) } });
  expect(res.status).toBe(201);
  return res.body.events as TEvent[];
}

test('only an owner grants retention:manage: an admin gets 403, the CLI refuses it, new keys and keys made before scopes do not have it', async () => {
  const owner = new WebSession(app.url);
  const view = await owner.signup(uniqueEmail('owner'), PASSWORD, 'Granting');
  const orgId = view.organization.id;
  const invitation = await owner.client.dashboard.members.invite.mutate({ email: uniqueEmail('admin'), role: 'admin' });
  const admin = new WebSession(app.url);
  await admin.client.account.acceptInvitation.mutate({ token: invitation.token, password: PASSWORD });

  expect(await failure(admin.client.dashboard.keys.create.mutate({ name: 'by admin', scopes: ['events:read', 'retention:manage'] }))).toEqual({
    status: 403, code: 'INSUFFICIENT_ROLE', message: 'Your role (admin) does not allow you to grant the scope retention:manage',
  });
  // Refused before anything is made: no key, no record of one.
  expect(await app.collections.apiKeys.countDocuments({ org_id: orgId })).toBe(0);
  // The other scopes are the admin's to give, and a key made without choosing gets the default three.
  const byAdmin = await admin.client.dashboard.keys.create.mutate({ name: 'admin default' });
  expect(byAdmin.apiKey.scopes).toEqual(['events:write', 'events:read', 'ledger:read']);
  const byOwner = await owner.client.dashboard.keys.create.mutate({ name: 'owner grants', scopes: ['events:read', 'retention:manage'] });
  expect(byOwner.apiKey.scopes).toEqual(['events:read', 'retention:manage']);
  expect((await call(`${app.url}/v1/retention`, { key: byOwner.key })).status).toBe(200);

  // Without the scope: the default key, and a key made before scopes existed (all the scopes there were then).
  const legacy = await app.key(orgId);
  await app.collections.apiKeys.updateOne({ key_id: legacy.keyId }, { $unset: { scopes: '' } });
  for (const key of [byAdmin.key, legacy.key]) {
    for (const [method, path, body] of [['GET', '/retention', undefined], ['GET', '/retention/holds', undefined], ['PUT', '/retention/policy', { days: 30 }], ['POST', '/retention/holds', { filter: {}, reason: 'x' }], ['DELETE', '/retention/holds/hold_x', undefined], ['POST', '/retention/erasures', { actor_id: 'a', reason: 'data_subject_request' }]] as const) {
      const res = await call(`${app.url}/v1${path}`, { key, method, body });
      expect({ route: `${method} ${path}`, status: res.status, body: res.body }).toEqual({ route: `${method} ${path}`, status: 403, body: { code: 'INSUFFICIENT_SCOPE', message: 'This API key lacks the scope retention:manage' } });
    }
  }
  expect((await call(`${app.url}/v1/ledger/key`, { key: legacy.key })).status).toBe(200);

  // The operator is no member: the CLI makes no such key.
  const cli = await runCli(['key', 'create', '--org', orgId, '--name', 'ops', '--scopes', 'events:read,retention:manage'], env);
  expect(cli.code).toBe(2);
  expect(cli.stderr).toContain('retention:manage is granted by an owner only');
  const defaults = JSON.parse((await runCli(['key', 'create', '--org', orgId, '--name', 'ops', '--json'], env)).stdout) as { scopes: string[] };
  expect(defaults.scopes).toEqual(['events:write', 'events:read', 'ledger:read']);
}, 60_000);

test('the policy over REST: read, refused outside the bounds, set with its notice; the entry names the key', async () => {
  const { orgId, manager } = await ownedOrg();
  const read = await call(`${app.url}/v1/retention`, { key: manager.key });
  expect(read.status).toBe(200);
  expect(read.body).toEqual({ days: null, pending: null, min_days: 30, max_days: null, notice_days: 7, holds: [], pruned: 0, erased: 0, pruned_before: null });

  const tooShort = await call(`${app.url}/v1/retention/policy`, { key: manager.key, method: 'PUT', body: { days: 5 } });
  expect(tooShort.status).toBe(400);
  expect(tooShort.body).toEqual({ code: 'VALIDATION_FAILED', message: 'Invalid request: days must be at least 30', fields: ['days'] });
  const extra = await call(`${app.url}/v1/retention/policy`, { key: manager.key, method: 'PUT', body: { days: 30, extra: 1 } });
  expect({ status: extra.status, body: extra.body }).toEqual({ status: 400, body: { code: 'VALIDATION_FAILED', message: 'Invalid request: extra is not a known field', fields: ['extra'] } });

  const set = await call(`${app.url}/v1/retention/policy`, { key: manager.key, method: 'PUT', body: { days: 30 } });
  expect(set.status).toBe(200);
  expect(set.body).toMatchObject({ days: null, pending: { days: 30 }, notice_days: 7 });
  const entry = await app.collections.events.findOne({ tenant: orgId, action: RETENTION_ACTIONS.policyChanged });
  expect(entry).toMatchObject({ actor_id: manager.id, api_key_id: 'audit_ledger' });
  expect(JSON.parse(entry?.metadata ?? '{}')).toMatchObject({ actor_type: 'api_key', scopes: ['retention:manage'], days: 30, previous_days: null });
  // Longer: at once.
  expect((await call(`${app.url}/v1/retention/policy`, { key: manager.key, method: 'PUT', body: { days: null } })).body).toMatchObject({ days: null, pending: null });
});

test('holds over REST: placed (201, by the key), listed, in the view, released; an unknown hold is 404', async () => {
  const { owner, orgId, manager } = await ownedOrg();
  const placed = await call(`${app.url}/v1/retention/holds`, { key: manager.key, body: { filter: { actor_id: 'carol' }, reason: 'litigation 2026-17' } });
  expect(placed.status).toBe(201);
  expect(placed.body).toEqual({ id: expect.stringMatching(/^hold_/), filter: { actor_id: 'carol' }, reason: 'litigation 2026-17', placed_at: expect.any(String), placed_by: manager.id });
  const hold = placed.body as { id: string };

  const listed = await call(`${app.url}/v1/retention/holds`, { key: manager.key });
  expect(listed.status).toBe(200);
  expect(listed.body).toEqual({ data: [placed.body] });
  expect((await call(`${app.url}/v1/retention`, { key: manager.key })).body.holds).toEqual([placed.body]);
  // The dashboard shows the same hold, placed by the key.
  expect((await owner.client.dashboard.retention.view.query()).holds).toEqual([placed.body]);

  for (const [body, message, field] of [
    [{ filter: { actor_id: 'x' }, reason: '  ' }, 'Invalid request: reason must not be empty', 'reason'],
    [{ filter: { nope: 'x' }, reason: 'r' }, 'Invalid request: filter.nope is not a known field', 'filter.nope'],
  ] as const) {
    const refused = await call(`${app.url}/v1/retention/holds`, { key: manager.key, body });
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 400, body: { code: 'VALIDATION_FAILED', message, fields: [field] } });
  }
  const unknown = await call(`${app.url}/v1/retention/holds/hold_none`, { key: manager.key, method: 'DELETE' });
  expect(unknown.status).toBe(404);
  expect(unknown.body).toEqual({ code: 'HOLD_NOT_FOUND', message: 'No such legal hold' });

  const released = await call(`${app.url}/v1/retention/holds/${hold.id}`, { key: manager.key, method: 'DELETE' });
  expect(released.status).toBe(200);
  expect(released.body).toEqual({ id: hold.id, released: true });
  expect((await call(`${app.url}/v1/retention/holds`, { key: manager.key })).body).toEqual({ data: [] });
  expect((await call(`${app.url}/v1/retention/holds/${hold.id}`, { key: manager.key, method: 'DELETE' })).status).toBe(404);

  const entries = await app.collections.events.find({ tenant: orgId, action: { $in: [RETENTION_ACTIONS.holdPlaced, RETENTION_ACTIONS.holdReleased] } }).sort({ seq: 1 }).toArray();
  expect(entries.map((e) => [e.action, e.actor_id, e.api_key_id, e.resource_id])).toEqual([
    [RETENTION_ACTIONS.holdPlaced, manager.id, 'audit_ledger', hold.id],
    [RETENTION_ACTIONS.holdReleased, manager.id, 'audit_ledger', hold.id],
  ]);
});

test('erasure over REST: an actor\'s events go, held ones stay, the entry names the key, and every verifier accepts the gap', async () => {
  const { orgId, writer, manager } = await ownedOrg();
  const names = ['alice', 'bob', 'carol'];
  await write(writer, Array.from({ length: 30 }, (_, i) => names[i % 3] as string));
  expect((await call(`${app.url}/v1/retention/holds`, { key: manager.key, body: { filter: { actor_id: 'carol' }, reason: 'litigation' } })).status).toBe(201);

  // Either actor_id or event_ids, with a reason code.
  const reasons = 'data_subject_request, legal_obligation, consent_withdrawn, contract_ended or data_minimization';
  for (const [body, message] of [
    [{ reason: 'data_subject_request' }, 'actor_id must be given, or event_ids instead (not both)'],
    [{ actor_id: 'alice', event_ids: ['x'], reason: 'data_subject_request' }, 'actor_id must be given, or event_ids instead (not both)'],
    [{ actor_id: 'alice', reason: 'because' }, `reason must be ${reasons}`],
    // Zod reports an absent enum value as a value outside it: the sentence says what it must be.
    [{ actor_id: 'alice' }, `reason must be ${reasons}`],
  ] as const) {
    const res = await call(`${app.url}/v1/retention/erasures`, { key: manager.key, body });
    expect({ body, status: res.status, code: (res.body as { code: string }).code, message: (res.body as { message: string }).message })
      .toEqual({ body, status: 400, code: 'VALIDATION_FAILED', message: `Invalid request: ${message}` });
  }

  const erased = await call(`${app.url}/v1/retention/erasures`, { key: manager.key, body: { actor_id: 'alice', reason: 'data_subject_request' } });
  expect(erased.status).toBe(200);
  expect(erased.body).toEqual({ erased: 10, held: 0, entries: [expect.any(Number)] });
  const held = await call(`${app.url}/v1/retention/erasures`, { key: manager.key, body: { actor_id: 'carol', reason: 'data_subject_request' } });
  expect(held.body).toMatchObject({ erased: 0, held: 10 });
  const stored = await app.collections.events.find({ tenant: orgId }).toArray();
  expect(['alice', 'bob', 'carol'].map((actor) => stored.filter((doc) => doc.actor_id === actor).length)).toEqual([0, 10, 10]);

  // The entry: the key as actor (its id, its scopes), written by the service itself; never alice's data.
  const [entrySeq] = erased.body.entries as [number];
  const entry = stored.find((doc) => doc.seq === entrySeq);
  expect(entry).toMatchObject({ action: RETENTION_ACTIONS.erased, actor_id: manager.id, api_key_id: 'audit_ledger' });
  expect(JSON.parse(entry?.metadata ?? '{}')).toMatchObject({ actor_type: 'api_key', scopes: ['retention:manage'], count: 10, reason: 'data_subject_request', held: 0 });
  expect(JSON.stringify(entry)).not.toContain('alice');
  expect((await call(`${app.url}/v1/retention`, { key: manager.key })).body).toMatchObject({ erased: 10 });

  // Chosen events, by id.
  const bob = stored.find((doc) => doc.actor_id === 'bob') as { _id: string };
  expect((await call(`${app.url}/v1/retention/erasures`, { key: manager.key, body: { event_ids: [bob._id], reason: 'legal_obligation' } })).body).toMatchObject({ erased: 1, held: 0 });

  // A hold on everything: 409 LEGAL_HOLD, until it is released.
  const everything = await call(`${app.url}/v1/retention/holds`, { key: manager.key, body: { filter: {}, reason: 'regulator inquiry' } });
  const refused = await call(`${app.url}/v1/retention/erasures`, { key: manager.key, body: { actor_id: 'bob', reason: 'data_subject_request' } });
  expect(refused.status).toBe(409);
  expect(refused.body).toMatchObject({ code: 'LEGAL_HOLD' });
  expect((await call(`${app.url}/v1/retention/holds/${(everything.body as { id: string }).id}`, { key: manager.key, method: 'DELETE' })).status).toBe(200);

  // cli verify on the whole log and ledger audit on the database: the key's erasures are authority.
  const reader = await app.services.stores.apiKeys.forOrg(orgId).create('auditor', new Date(), ['events:read', 'ledger:read']);
  await app.services.integrator.integrate(orgId, { storedTo: await app.collections.events.countDocuments({ tenant: orgId }) });
  const out = join(dir, 'erased.json');
  expect((await runCli(['export', '--url', app.url, '--key', reader.key, '--out', out, '--with-proofs'], {})).code).toBe(0);
  const verified = await runCli(['verify', '--verifier-key', TEST_LEDGER_SIGNER.text, '--events', out, '--proofs', `${out}.proofs.json`], {});
  expect(verified.stdout).toContain('0 events pruned under the retention policy and 11 erased on request');
  expect(verified.stdout).not.toContain('FAIL');
  expect(verified.code).toBe(0);
  const audited = await runCli(['ledger', 'audit', '--org', orgId, '--verifier-key', TEST_LEDGER_SIGNER.text, '--json'], env);
  expect((JSON.parse(audited.stdout) as { reports: unknown[] }).reports[0]).toMatchObject({ findings: [], removed: { pruned: 0, erased: 11 } });
  expect(audited.code).toBe(0);
}, 120_000);
