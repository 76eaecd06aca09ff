/**
 * A database server of a test's own, to kill and restart: the other suites share the run's server.
 * Where the project's FerretDB is built (scripts/ferretdb.sh, as CI does), a second FerretDB process on
 * a PostgreSQL database of its own; otherwise a mongodb-memory-server on a fixed port and data directory.
 * Either way a restart keeps the data, as a real database's does.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './processes';
import { eventually } from './waiting';

export interface DisposableDatabase {
  uri: string;
  /** SIGKILL: no shutdown, as in a crash. */
  kill(): Promise<void>;
  /** Starts it again on the same address with the same data. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

const FERRETDB = join(ROOT, '.cache', 'ferretdb', 'bin', 'ferretdb-v1.24.2');
const PG_SERVER = 'postgres://root@127.0.0.1:5432';

/** A loopback port free right now (for a process that must be told its port). */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

async function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => { resolve(false); });
    socket.connect(port, '127.0.0.1');
  });
}

async function ferretDb(): Promise<DisposableDatabase> {
  const port = await freePort();
  const dbName = `ferretdb_outage_${process.pid}`;
  const psql = (sql: string) => spawnSync('psql', [`${PG_SERVER}/postgres`, '-qtAc', sql], { encoding: 'utf8' });
  psql(`drop database if exists ${dbName}`);
  const created = psql(`create database ${dbName}`);
  if (created.status !== 0) throw new Error(`could not create the PostgreSQL database: ${created.stderr}`);
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(FERRETDB, [
      '--handler=postgresql', `--postgresql-url=${PG_SERVER}/${dbName}`, `--listen-addr=127.0.0.1:${port}`,
      '--telemetry=disable', '--debug-addr=-', '--state-dir=-', '--log-level=error',
    ], { stdio: 'ignore' });
    await eventually(`FerretDB answering on port ${port}`, () => answers(port), 10_000);
  };
  const kill = async () => {
    if (!child || child.exitCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    uri: `mongodb://127.0.0.1:${port}/`,
    kill,
    restart: start,
    close: async () => {
      await kill();
      psql(`drop database if exists ${dbName}`);
    },
  };
}

async function memoryServer(): Promise<DisposableDatabase> {
  const { MongoMemoryServer } = await import('mongodb-memory-server');
  const port = await freePort();
  const dbPath = mkdtempSync(join(tmpdir(), 'outage-'));
  const create = () => MongoMemoryServer.create({ instance: { port, dbPath, storageEngine: 'wiredTiger', ip: '127.0.0.1' } });
  let server = await create();
  const kill = async () => {
    const mongod = server.instanceInfo?.instance.mongodProcess;
    if (!mongod || mongod.exitCode !== null) return;
    const exited = once(mongod, 'exit');
    mongod.kill('SIGKILL');
    await exited;
  };
  return {
    uri: `mongodb://127.0.0.1:${port}/`,
    kill,
    restart: async () => {
      server = await create();
    },
    close: async () => {
      await server.stop({ doCleanup: false }).catch(() => undefined);
      rmSync(dbPath, { recursive: true, force: true });
    },
  };
}

export function startDisposableDatabase(): Promise<DisposableDatabase> {
  return existsSync(FERRETDB) ? ferretDb() : memoryServer();
}
