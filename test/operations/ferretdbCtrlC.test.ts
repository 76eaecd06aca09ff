/**
 * Ctrl-C on `npm start` stops the service, not the bundled FerretDB it started (src/db/localFerretDb.ts):
 * a terminal sends SIGINT to its whole foreground process group, so FerretDB must be in a group of its
 * own to run on and make the next start instant. The test starts a FerretDB of its own (its own port,
 * PostgreSQL database and pid files: the suite's at 127.0.0.1:27017 is left alone) from a child process
 * that stands for `npm start`, in a process group of its own as a terminal's foreground job is, sends
 * SIGINT to that group, and asks FerretDB for a ping afterwards.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { ROOT } from '../helpers/processes';

const database = `ferretdb_ctrlc_${randomBytes(4).toString('hex')}`;
const stateDir = mkdtempSync(join(tmpdir(), 'ferretdb-ctrlc-'));
let env: NodeJS.ProcessEnv;
let service: ChildProcess | undefined;

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

beforeAll(async () => {
  env = { ...process.env, FERRETDB_PORT: String(await freePort()), FERRETDB_PG_URL: `postgres://root@127.0.0.1:5432/${database}`, FERRETDB_STATE_DIR: stateDir };
});

afterAll(() => {
  if (service?.pid && service.exitCode === null && service.signalCode === null) process.kill(-service.pid, 'SIGKILL');
  spawnSync('bash', [join(ROOT, 'scripts', 'ferretdb.sh'), 'stop'], { env, stdio: 'ignore' });
  spawnSync('psql', ['postgres://root@127.0.0.1:5432/postgres', '-qc', `drop database if exists "${database}"`], { stdio: 'ignore' });
  rmSync(stateDir, { recursive: true, force: true });
});

test('SIGINT to the process group of the process that started FerretDB leaves FerretDB answering', async () => {
  // What main.ts does through connectDatabase when it falls back: start FerretDB, then run until a signal.
  const program = "require('./src/db/localFerretDb.ts').startLocalFerretDb().then((uri) => { console.log(uri); setInterval(() => undefined, 1000); }, (e) => { console.error(e); process.exit(1); });";
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', program], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
  service = child;
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', () => { if (out.includes('\n')) resolve(); });
    child.once('exit', (code) => { reject(new Error(`the starting process exited with ${code}`)); });
  });
  const uri = out.trim();
  expect(uri).toBe(`mongodb://127.0.0.1:${env.FERRETDB_PORT}/`);

  // FerretDB is in a process group other than the one the terminal signals.
  const ferretPid = readFileSync(join(stateDir, 'ferretdb.pid'), 'utf8').trim();
  const group = spawnSync('ps', ['-o', 'pgid=', '-p', ferretPid], { encoding: 'utf8' }).stdout.trim();
  expect(group).not.toBe('');
  expect(group).not.toBe(String(child.pid));

  const exited = once(child, 'exit');
  process.kill(-(child.pid ?? 0), 'SIGINT'); // what Ctrl-C in a terminal does to its foreground job
  const [code, signal] = (await exited) as [number | null, string | null];
  expect({ code, signal }).toEqual({ code: null, signal: 'SIGINT' });

  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
  try {
    expect(await client.db('admin').command({ ping: 1 })).toMatchObject({ ok: 1 });
  } finally {
    await client.close();
  }
});
