/**
 * The ledger's name is fixed when its key is made (review item 5): a restart on another port keeps the
 * key and its name; only an explicitly set, different LEDGER_NAME is refused.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call } from '../helpers/api';
import { freePort } from '../helpers/disposableDatabase';
import { startTestApp, uniqueDbName } from '../helpers/harness';
import { ROOT, startServerProcess } from '../helpers/processes';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ledgername-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

test('a restart on another port keeps the key and its name; a different LEDGER_NAME is refused', async () => {
  // Unset (empty) LEDGER_NAME and key file: the defaults a new user gets, in a data directory of its own.
  const env = { LEDGER_NAME: '', LEDGER_SIGNING_KEY_FILE: '', DATA_DIR: dir, MONGODB_DB: uniqueDbName('ledgername') };
  // An organization and key in that database, made by an app of the test's own.
  const admin = await startTestApp({ label: 'ledgername', sharedDbName: env.MONGODB_DB });
  const org = await admin.org();
  await admin.close();
  const first = await startServerProcess({ ...env, PORT: String(await freePort()) });
  const key = (await call(`${first.url}/v1/ledger/key`, { key: org.key })).body as { key_name: string; verifier_key: string };
  await first.stop();
  expect(key.key_name).toMatch(/^localhost:\d+\/ledger$/);
  expect(readFileSync(join(dir, 'ledger-signing-key'), 'utf8')).toContain(`+${key.key_name}+`);

  const second = await startServerProcess({ ...env, PORT: String(await freePort()) });
  try {
    expect((await call(`${second.url}/v1/ledger/key`, { key: org.key })).body).toEqual(key);
  } finally {
    await second.stop();
  }

  const refused = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: '0', METRICS_PORT: '0', LEDGER_NAME: 'other.example/ledger' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  refused.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(refused, 'exit')) as [number];
  expect(code).toBe(1);
  expect(stderr).toContain(`is for ${key.key_name}, but LEDGER_NAME is other.example/ledger`);
}, 120_000);
