/** The admin CLI, run as a real process against the test database. */
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { call, eventBody } from '../helpers/api';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp } from '../helpers/harness';
import { runCli, runCommand, testLedgerKeyFile } from '../helpers/processes';

let app: TestApp;
let env: Record<string, string>;

beforeAll(async () => {
  app = await startTestApp({ label: 'cli' });
  // The installation's key file: the CLI seals its self-audit records with it.
  env = { MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName, LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile() };
});
afterAll(() => app.close());

async function json(args: string[]): Promise<any> {
  const res = await runCli([...args, '--json'], env);
  expect(res.stderr).not.toMatch(/Error:|at .*\.ts:\d+/);
  expect(res.code).toBe(0);
  const lines = res.stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0] ?? '');
}

test('org and key lifecycle, each command printing exactly one JSON object', async () => {
  const org = await json(['org', 'create', '--name', 'Cli Co', '--plan', 'pro', '--monthly-cap', '5']);
  expect(org).toEqual({ id: expect.stringMatching(/^org_/), name: 'Cli Co', plan: 'pro', monthly_cap: 5 });
  const free = await json(['org', 'create', '--name', 'Free Co']);
  expect(free.monthly_cap).toBe(10_000);
  expect((await json(['org', 'list'])).organizations.map((o: any) => o.id)).toEqual(expect.arrayContaining([org.id, free.id]));

  const key = await json(['key', 'create', '--org', org.id, '--name', 'backend']);
  expect(key).toEqual({ id: expect.stringMatching(/^key_/), key: expect.stringMatching(/^alk_[A-Za-z0-9_-]{43}$/), name: 'backend', organization_id: org.id, scopes: ['events:write', 'events:read', 'ledger:read'] });

  const created = await call(`${app.url}/v1/events`, { key: key.key, body: eventBody() });
  expect(created.status).toBe(201);
  expect(created.body.event.api_key_id).toBe(key.id);

  const listed = await json(['key', 'list', '--org', org.id]);
  expect(listed.keys).toHaveLength(1);
  expect(listed.keys[0]).toMatchObject({ id: key.id, name: 'backend', status: 'active', last4: key.key.slice(-4) });
  expect(JSON.stringify(listed)).not.toContain(key.key);

  expect(await json(['key', 'revoke', key.id])).toMatchObject({ id: key.id, status: 'revoked' });
  const refused = await call(`${app.url}/v1/events`, { key: key.key, body: eventBody() });
  expect(refused.status).toBe(401);
  expect(refused.body.message).toBe('Invalid API key');
});

test('mistakes are explained, with a non-zero exit', async () => {
  const res = await runCli(['org', 'create', '--plan', 'gold', '--name', 'x', '--json'], env);
  expect(res.code).toBe(2);
  expect(JSON.parse(res.stdout)).toEqual({ error: '--plan must be one of free, pro, enterprise' });
  const unknownOrg = await runCli(['key', 'create', '--org', 'org_nope', '--name', 'k', '--json'], env);
  expect(unknownOrg.code).not.toBe(0);
  expect(JSON.parse(unknownOrg.stdout).error).toContain('org_nope');
});

test('export writes the file through the REST API and reports one JSON object', async () => {
  const org = await app.org();
  for (let i = 0; i < 30; i++) await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ actor: { id: i % 3 ? 'x' : 'wanted' } }) });
  const dir = mkdtempSync(join(tmpdir(), 'audit-export-'));
  const out = join(dir, 'audit.csv');
  const summary = await json(['export', '--url', app.url, '--key', org.key, '--format', 'csv', '--actor-id', 'wanted', '--out', out]);
  const text = readFileSync(out, 'utf8');
  expect(summary).toEqual({ format: 'csv', bytes: Buffer.byteLength(text), out, tree_size: 30 });
  const rows = parse<Record<string, string>>(text, { columns: true });
  expect(rows).toHaveLength(10);
  expect(rows.every((r) => r.actor_id === 'wanted')).toBe(true);

  const bad = await runCli(['export', '--url', app.url, '--key', 'alk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', '--out', join(dir, 'x.json'), '--json'], env);
  expect(bad.code).toBe(1);
  expect(JSON.parse(bad.stdout).error).toBe('The server refused the API key (401 Missing or invalid API key): check --key');
});

test('the database named in MONGODB_URI is the one used; MONGODB_DB only when the URI names none', async () => {
  const org = await app.services.stores.orgs.create({ name: 'Named In Uri', plan: 'free', monthlyCap: null }, new Date());
  const base = (process.env.MONGODB_URI ?? '').replace(/\/?(\?|$)/, '/$1');
  const inPath = base.replace(/\/(\?|$)/, `/${app.dbName}$1`);
  // The path wins over a MONGODB_DB that names another database.
  const named = await runCli(['org', 'list', '--json'], { MONGODB_URI: inPath, MONGODB_DB: 'some_other_db' });
  expect(named.code).toBe(0);
  expect(JSON.parse(named.stdout).organizations.map((o: { id: string }) => o.id)).toContain(org._id);
  const elsewhere = await runCli(['org', 'list', '--json'], { MONGODB_URI: base, MONGODB_DB: `${app.dbName}_empty` });
  expect(elsewhere.code).toBe(0);
  expect(JSON.parse(elsewhere.stdout).organizations).toEqual([]);
  await app.client.db(`${app.dbName}_empty`).dropDatabase();
});

test('however it is started (npx, npm run -s, the launcher), --json prints exactly one JSON document on stdout', async () => {
  const org = await json(['org', 'create', '--name', 'Started Co']);
  for (const [program, args] of [['npx', ['audit-ledger']], ['npm', ['run', '-s', 'cli', '--']], [process.execPath, ['bin/audit-ledger.cjs']]] as const) {
    const res = await runCommand(program, [...args, 'key', 'list', '--org', org.id, '--json'], env);
    expect({ program, code: res.code }).toEqual({ program, code: 0 });
    expect(JSON.parse(res.stdout)).toEqual({ keys: [] });
  }
});

test('each command has its own options and help; an unknown one is named', async () => {
  const help = await runCli(['key', 'revoke', '--help'], env);
  expect(help.code).toBe(0);
  expect(help.stdout).toContain('Usage: audit-ledger key revoke KEY_ID');
  // --org belongs to other commands, not to key revoke.
  const misplaced = await runCli(['key', 'revoke', 'key_x', '--org', 'org_x', '--json'], env);
  expect(misplaced.code).toBe(2);
  expect(JSON.parse(misplaced.stdout).error).toContain('--org');
  const unknown = await runCli(['org', 'delete', '--json'], env);
  expect(unknown.code).toBe(2);
  expect(JSON.parse(unknown.stdout)).toEqual({ error: 'Unknown command: org delete' });
});

test('ledger key prints the verifier key auditors pin, read from the key file; without one it says where to get it', async () => {
  const res = await runCli(['ledger', 'key'], env);
  expect([res.code, res.stdout]).toEqual([0, `${TEST_LEDGER_SIGNER.text}\n`]);
  const without = await runCli(['ledger', 'key'], { ...env, LEDGER_SIGNING_KEY_FILE: join(tmpdir(), 'no-such-key-file') });
  expect(without.code).not.toBe(0);
  expect(without.stderr).toContain('GET /v1/ledger/key');
});
