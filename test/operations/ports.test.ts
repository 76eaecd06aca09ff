/**
 * No second fixed port: two instances on one host started with only different PORTs both run (the
 * metrics and internal listeners default to free ports), and a port in use stops the start with one
 * line naming the variable to set, exit 1 and no stack trace.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { freePort } from '../helpers/disposableDatabase';
import { mongoUri, uniqueDbName } from '../helpers/harness';
import { ROOT, startServerProcess, testLedgerKeyFile, type ServerProcess } from '../helpers/processes';

let dir: string;
let client: MongoClient;
const dbName = uniqueDbName('ports');
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ports-'));
  client = await MongoClient.connect(mongoUri());
});
afterAll(async () => {
  await client.db(dbName).dropDatabase().catch(() => undefined);
  await client.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What a user sets: the database and the data directory; METRICS_PORT and INTERNAL_PORT left at their defaults. */
function userEnv(): Record<string, string> {
  return { MONGODB_URI: mongoUri(), MONGODB_DB: dbName, DATA_DIR: join(dir, 'data'), METRICS_PORT: '', INTERNAL_PORT: '' };
}

/** Holds a loopback port, as another program would. */
async function occupy(): Promise<{ port: number; server: Server }> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as { port: number }).port, server };
}

/** Runs `src/main.ts` expecting it to stop at start; resolves with its exit code and stderr. */
async function startFailing(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', LOG_LEVEL: 'warn', LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile(), ...userEnv(), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code] = (await once(child, 'exit')) as [number];
  clearTimeout(timer);
  return { code, stderr };
}

test('two instances started with only different PORTs both run and serve their metrics', async () => {
  const servers: ServerProcess[] = [];
  try {
    for (const port of [await freePort(), await freePort()]) servers.push(await startServerProcess({ ...userEnv(), PORT: String(port) }));
    const [a, b] = servers as [ServerProcess, ServerProcess];
    expect(a.metricsUrl).not.toBe(b.metricsUrl);
    for (const server of servers) {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      const metrics = await fetch(server.metricsUrl);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain('# HELP');
    }
  } finally {
    for (const server of servers) await server.stop();
  }
}, 120_000);

test.each([
  ['PORT', {}],
  ['METRICS_PORT', { PORT: '0' }],
  ['INTERNAL_PORT', { PORT: '0', METRICS_PORT: '0' }],
])('a busy %s stops the start with one line naming it, exit 1, no stack trace', async (variable, others) => {
  const busy = await occupy();
  try {
    const { code, stderr } = await startFailing({ ...others, [variable]: String(busy.port) });
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n');
    // What came, if not one line: the whole of stderr.
    expect({ lines: lines.length, stderr }).toEqual({ lines: 1, stderr: expect.stringContaining(`set ${variable} to a free port`) as unknown });
    expect(stderr).toContain(`Port ${busy.port} is already in use`);
    expect(stderr).not.toMatch(/\n\s+at /);
  } finally {
    busy.server.close();
  }
}, 90_000);
