/**
 * Scoped API keys: every /v1 operation (from the table the server itself enforces, REST_OPERATIONS, and
 * the two streaming routes and the tiles API) answers 403 INSUFFICIENT_SCOPE, naming the missing scope,
 * to a key without its scope, and serves a key with it; keys made before scopes existed keep the three
 * there were then (never `retention:manage`); an export with proofs works with a read-only key.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SCOPES, type Scope } from '../../src/domain/apiKey';
import { REST_OPERATIONS } from '../../src/http/restApi';
import { call, createEvent, eventually } from '../helpers/api';
import { startTestApp, type TestApp } from '../helpers/harness';
import { runCli, testLedgerKeyFile } from '../helpers/processes';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ label: 'scopes' });
});
afterAll(() => app.close());

const ROUTES: { method: string; path: string; scope: Scope }[] = [
  ...REST_OPERATIONS.map((op) => ({ method: op.method, path: op.path, scope: op.scope as Scope })),
  { method: 'GET', path: '/events/export', scope: 'events:read' },
  { method: 'GET', path: '/ledger/proofs', scope: 'ledger:read' },
  { method: 'GET', path: '/ledger/log/checkpoint', scope: 'ledger:read' },
];

const BODIES: Record<string, unknown> = {
  '/events': { actor: { id: 'a' }, action: 'x.created', resource: { type: 't', id: '1' } },
  '/events/batch': { events: [{ actor: { id: 'a' }, action: 'x.created', resource: { type: 't', id: '1' } }] },
  '/streams': { name: 's', destination: { type: 'webhook', url: 'http://127.0.0.1:9/' } },
  '/retention/policy': { days: null },
  '/retention/holds': { filter: { actor_id: 'nobody' }, reason: 'scopes matrix' },
  '/retention/erasures': { actor_id: 'nobody', reason: 'data_subject_request' },
};

test('every operation names a scope, and each scope is one the keys can have', () => {
  expect(REST_OPERATIONS.length).toBeGreaterThan(10);
  for (const op of REST_OPERATIONS) expect({ op: `${op.method} ${op.path}`, scope: SCOPES.includes(op.scope as Scope) }).toEqual({ op: `${op.method} ${op.path}`, scope: true });
});

test('the scopes tables (docs/api.md, docs/access.md) list every scope, in SCOPES order', () => {
  /** The first cells of the table whose header row starts with `header`. */
  const firstCells = (file: string, header: string) => {
    const lines = readFileSync(join(__dirname, '..', '..', file), 'utf8').split('\n');
    const start = lines.findIndex((line) => line.startsWith(header));
    const rows: string[] = [];
    for (let i = start + 2; start >= 0 && lines[i]?.startsWith('|'); i++) rows.push((lines[i] as string).split('|')[1]?.trim().replaceAll('`', '') ?? '');
    return rows;
  };
  expect(firstCells('docs/api.md', '| scope | operations |')).toEqual([...SCOPES]);
  expect(firstCells('docs/access.md', '| scope | opens | given by |')).toEqual([...SCOPES]);
});

test('scopes × routes: 403 naming the missing scope without it, served with it', async () => {
  const org = await app.org();
  const event = await createEvent(app.url, org.key);
  const stream = await call(`${app.url}/v1/streams`, { key: org.key, body: BODIES['/streams'] });
  await eventually('a checkpoint', async () => (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).status === 200);
  const keys = await Promise.all(SCOPES.map(async (scope) => ({ scope, key: (await app.services.stores.apiKeys.forOrg(org.id).create(`only ${scope}`, new Date(), [scope])).key })));
  for (const { scope: held, key } of keys) {
    for (const route of ROUTES) {
      const path = route.path.replace('/events/{id}', `/events/${event.id}`).replace('{id}', stream.body.id as string);
      const body = route.method === 'GET' || route.method === 'DELETE' ? undefined : (BODIES[route.path] ?? {});
      // Deleting the stream with the key allowed to would end the matrix early: ask about another one.
      const target = route.method === 'DELETE' ? path.replace(stream.body.id as string, '00000000-0000-0000-0000-000000000000') : path;
      const res = await call(`${app.url}/v1${target}`, { key, method: route.method, body });
      const name = `${held} → ${route.method} ${route.path}`;
      if (held === route.scope) {
        expect({ name, status: res.status === 403 || res.status === 401 ? res.status : 'served' }).toEqual({ name, status: 'served' });
      } else {
        expect({ name, status: res.status, body: res.body }).toEqual({ name, status: 403, body: { code: 'INSUFFICIENT_SCOPE', message: `This API key lacks the scope ${route.scope}` } });
      }
    }
  }
});

test('a key made before scopes existed keeps the three it had (not retention:manage); key create --scopes makes a read-only key that exports with proofs', async () => {
  const org = await app.org();
  await createEvent(app.url, org.key);
  await app.collections.apiKeys.updateOne({ key_id: org.keyId }, { $unset: { scopes: '' } });
  expect((await call(`${app.url}/v1/events`, { key: org.key, body: BODIES['/events'] })).status).toBe(201);
  expect((await call(`${app.url}/v1/ledger/key`, { key: org.key })).status).toBe(200);
  expect((await call(`${app.url}/v1/retention`, { key: org.key })).body).toEqual({ code: 'INSUFFICIENT_SCOPE', message: 'This API key lacks the scope retention:manage' });

  const env = { MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName, LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile() };
  const created = await runCli(['key', 'create', '--org', org.id, '--name', 'auditor', '--scopes', 'events:read,ledger:read', '--json'], env);
  expect(created.code).toBe(0);
  const auditor = JSON.parse(created.stdout) as { key: string; scopes: string[] };
  expect(auditor.scopes).toEqual(['events:read', 'ledger:read']);
  expect((await call(`${app.url}/v1/events`, { key: auditor.key, body: BODIES['/events'] })).body).toMatchObject({ code: 'INSUFFICIENT_SCOPE', message: 'This API key lacks the scope events:write' });
  expect((await runCli(['key', 'create', '--org', org.id, '--name', 'x', '--scopes', 'events:delete'], env)).code).toBe(2);

  // Both events and the record of the CLI's key creation (audit_ledger.key.created, written by this instance from the outbox).
  await eventually('a checkpoint of both events and the record', async () => (await call(`${app.url}/v1/ledger/checkpoint`, { key: auditor.key })).body.tree_size === 3);
  const dir = mkdtempSync(join(tmpdir(), 'scopes-'));
  try {
    const out = join(dir, 'export.json');
    expect((await runCli(['export', '--url', app.url, '--key', auditor.key, '--out', out, '--with-proofs'], {})).code).toBe(0);
    const verifierKey = (await call(`${app.url}/v1/ledger/key`, { key: auditor.key })).body.verifier_key as string;
    const verified = await runCli(['verify', '--verifier-key', verifierKey, '--events', out, '--proofs', `${out}.proofs.json`, '--state', join(dir, 'state'), '--json'], {});
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, events: 3 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
