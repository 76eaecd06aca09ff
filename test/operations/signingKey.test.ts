/**
 * No silent new key. A new user moves the data directory away to start afresh while the database stays
 * where it was (MONGODB_URI, or the FerretDB fallback, whose data is in PostgreSQL): the next start would
 * make a new key, halt every organization's ledger and keep answering 201. It is refused instead, with
 * one paragraph naming the key file, the data directory and the way out; `ledger new-installation
 * --confirm` begins a new installation on purpose (recorded), after which the service starts; putting the
 * original key file back lets it start too.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { privateKeyText } from '../../src/domain/ledger/note';
import { call, eventBody } from '../helpers/api';
import { freePort } from '../helpers/disposableDatabase';
import { mongoUri, startTestApp, TEST_LEDGER_SEED, TEST_LEDGER_SIGNER, uniqueDbName } from '../helpers/harness';
import { ROOT, runCli, startServerProcess } from '../helpers/processes';
import { TimedOut, eventually } from '../helpers/waiting';

let dir: string;
let client: MongoClient;
const dbNames: string[] = [];
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'signingkey-'));
  client = await MongoClient.connect(mongoUri());
});
afterAll(async () => {
  for (const name of dbNames) await client.db(name).dropDatabase().catch(() => undefined);
  await client.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A data directory and a database of the test's own, with the defaults a new user gets: the key file under DATA_DIR, named by the service. */
function installation(label: string): { dataDir: string; env: Record<string, string> } {
  const dataDir = join(dir, label, 'data');
  const dbName = uniqueDbName(label);
  dbNames.push(dbName);
  return { dataDir, env: { MONGODB_URI: mongoUri(), MONGODB_DB: dbName, DATA_DIR: dataDir, LEDGER_SIGNING_KEY_FILE: '', LEDGER_NAME: '' } };
}

/**
 * Starts `src/main.ts` expecting a refusal: while it runs, POSTs an event to its port again and again;
 * resolves with its exit code, its output and every status any of those requests got.
 */
async function startRefused(env: Record<string, string>, key: string): Promise<{ code: number; stderr: string; stdout: string; statuses: number[] }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number]>;
  const statuses: number[] = [];
  // A service that started after all (the code before the check) is stopped at its first 201, or after a minute.
  const running = () => child.exitCode === null && child.signalCode === null;
  await eventually('the service to exit', async () => {
    if (!running()) return true;
    try {
      statuses.push((await call(`http://127.0.0.1:${port}/v1/events`, { key, body: eventBody() })).status);
    } catch {
      // Nothing listens: the expected answer.
    }
    if (statuses.includes(201)) child.kill('SIGTERM');
    return false;
  }, 60_000, 50).catch((error: unknown) => {
    if (!(error instanceof TimedOut)) throw error;
    child.kill('SIGTERM');
  });
  const [code] = await exited;
  return { code, stderr, stdout, statuses };
}

/** Writes one event and waits until a checkpoint covers it (its proof waits for one). */
async function writeSigned(url: string, key: string): Promise<void> {
  const created = await call(`${url}/v1/events`, { key, body: eventBody() });
  expect(created.status).toBe(201);
  expect((await call(`${url}/v1/events/${created.body.event.id as string}/proof`, { key })).status).toBe(200);
}

/** The refusal's one paragraph: the key file, the data directory, both ways out; no stack trace. */
function expectRefusal(refused: { code: number; stderr: string; stdout: string; statuses: number[] }, keyFile: string, dataDir: string): void {
  expect(refused.statuses).not.toContain(201);
  expect(refused.code).toBe(1);
  expect(refused.stdout).not.toContain('listening');
  const message = refused.stderr.trim();
  expect(message).not.toContain('\n');
  expect(message).not.toMatch(/\bat .*\.ts:\d+|Error:/);
  expect(message).toContain('Audit Ledger did not start');
  expect(message).toContain(`put it back at ${keyFile}`);
  expect(message).toContain(`The data directory is ${dataDir} (DATA_DIR)`);
  expect(message).toContain('npx audit-ledger ledger new-installation --confirm');
}

test('data directory moved away: the start is refused, no new key, no 201; `ledger new-installation --confirm` begins anew, recorded, and the service starts', async () => {
  const { dataDir, env } = installation('moved');
  const keyFile = join(dataDir, 'ledger-signing-key');
  // The organization and its key, made by an app of the test's own (it signs nothing: no events).
  const admin = await startTestApp({ label: 'moved', sharedDbName: env.MONGODB_DB });
  const org = await admin.org();
  await admin.close();

  const first = await startServerProcess(env);
  let oldKey: string;
  try {
    await writeSigned(first.url, org.key);
    oldKey = (await call(`${first.url}/v1/ledger/key`, { key: org.key })).body.verifier_key as string;
    // Nothing is begun anew while an instance runs on the database (here one with the original key).
    const whileRunning = await runCli(['ledger', 'new-installation', '--confirm', '--json'], { ...env, DATA_DIR: join(dir, 'moved', 'elsewhere') });
    expect(whileRunning.code).toBe(1);
    expect(JSON.parse(whileRunning.stdout).error).toMatch(/^1 instance\(s\) of the service are running on this database: stop every instance first/);
  } finally {
    await first.stop();
  }
  expect(existsSync(keyFile)).toBe(true);

  renameSync(dataDir, `${dataDir}-moved-away`);
  const refused = await startRefused(env, org.key);
  expectRefusal(refused, keyFile, dataDir);
  expect(refused.stderr).toContain(`there is no signing key file at ${keyFile}`);
  expect(refused.stderr).toContain(`signed by ${oldKey.split('+')[0] as string} (key id ${oldKey.split('+')[1] as string})`);
  // Refused means no key was made either: the next start would otherwise find one and take it for good.
  expect(existsSync(keyFile)).toBe(false);

  // Without --confirm nothing changes.
  const dry = await runCli(['ledger', 'new-installation', '--json'], env);
  expect(dry.code).toBe(2);
  expect(JSON.parse(dry.stdout).error).toMatch(/^Nothing was changed: the stored ledger \(\d+ checkpoints, \d+ installation log entries\) was signed by .*Run again with --confirm/);
  expect(existsSync(keyFile)).toBe(false);

  const begun = await runCli(['ledger', 'new-installation', '--confirm', '--json'], env);
  expect(begun.code).toBe(0);
  const answer = JSON.parse(begun.stdout);
  expect(answer).toMatchObject({ begun: true, key_file: keyFile, key_created: true, resealed: [{ org: org.id, size: 1 }] });
  expect(answer.verifier_key).not.toBe(oldKey);
  expect(begun.stderr).toContain('NEW INSTALLATION begun by an operator');
  const record = await client.db(env.MONGODB_DB).collection('ledger_installations').findOne({ _id: answer.record });
  expect(record).toMatchObject({ state: 'done', key_file: keyFile, verifier_key: answer.verifier_key, key_created: true, resealed: [{ org: org.id, size: 1 }] });
  expect(record?.replaced.signers).toEqual([`${oldKey.split('+')[0] as string} (key id ${oldKey.split('+')[1] as string})`]);

  // Run again, the ledger fits the key: nothing is dropped.
  const again = await runCli(['ledger', 'new-installation', '--confirm', '--json'], env);
  expect(again.code).toBe(1);
  expect(JSON.parse(again.stdout).error).toContain('the stored ledger is signed by the key in');

  const next = await startServerProcess(env);
  try {
    await writeSigned(next.url, org.key);
    expect((await call(`${next.url}/v1/ledger/key`, { key: org.key })).body.verifier_key).toBe(answer.verifier_key);
    expect((await call(`${next.url}/v1/ledger/checkpoint`, { key: org.key })).body.tree_size).toBe(2);
  } finally {
    await next.stop();
  }
}, 180_000);

test('another key in the key file is refused; the original key file put back starts the service', async () => {
  const { dataDir, env } = installation('restored');
  const keyFile = join(dataDir, 'ledger-signing-key');
  // A ledger signed by the installation's key (the test key), by an app of the test's own.
  const app = await startTestApp({ label: 'restored', sharedDbName: env.MONGODB_DB });
  const org = await app.org();
  try {
    await writeSigned(app.url, org.key);
  } finally {
    await app.close();
  }

  mkdirSync(dataDir, { recursive: true });
  writeFileSync(keyFile, `${privateKeyText(TEST_LEDGER_SIGNER.name, randomBytes(32))}\n`, { mode: 0o600 });
  const refused = await startRefused(env, org.key);
  expectRefusal(refused, keyFile, dataDir);
  expect(refused.stderr).toContain(`the signing key file ${keyFile} holds another key, ${TEST_LEDGER_SIGNER.name} (key id`);

  writeFileSync(keyFile, `${privateKeyText(TEST_LEDGER_SIGNER.name, TEST_LEDGER_SEED)}\n`, { mode: 0o600 });
  const restored = await startServerProcess(env);
  try {
    await writeSigned(restored.url, org.key);
    expect((await call(`${restored.url}/v1/ledger/key`, { key: org.key })).body.verifier_key).toBe(TEST_LEDGER_SIGNER.text);
  } finally {
    await restored.stop();
  }
}, 180_000);
