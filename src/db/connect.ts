/**
 * Database connection: MONGODB_URI when given, otherwise an embedded MongoDB (mongodb-memory-server)
 * whose files live under DATA_DIR, so a restart keeps every event. The embedded server's address is
 * written to DATA_DIR so that the CLI talks to the running instance instead of starting a second one.
 * When MongoDB cannot be downloaded, the bundled FerretDB stands in, and that decision is written to
 * DATA_DIR too (`database-fallback.json`): later starts and CLI commands use FerretDB at once.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { MongoClient, type Db, type MongoClientOptions } from 'mongodb';
import { ConnectionString } from 'mongodb-connection-string-url';
import type { Logger } from 'pino';
import type { Config } from '../config/env';
import { localFerretDbMissing, startLocalFerretDb } from './localFerretDb';

/** Which database serves: MONGODB_URI's, the embedded MongoDB under DATA_DIR, or the bundled FerretDB. */
export type DatabaseKind = 'mongodb-uri' | 'embedded-mongodb' | 'ferretdb';

export interface Database {
  client: MongoClient;
  db: Db;
  uri: string;
  kind: DatabaseKind;
  close(): Promise<void>;
}

export class DatabaseStartError extends Error {
  override readonly name = 'DatabaseStartError';
}

const EMBEDDED_PORT = 27117;

interface EmbeddedInfo {
  uri: string;
  pid: number;
}

function embeddedInfoPath(dataDir: string): string {
  return join(resolve(dataDir), 'embedded-mongodb.json');
}

/** The remembered decision to use the bundled FerretDB because MongoDB could not be downloaded. */
export interface FerretDbFallback {
  database: 'ferretdb';
  /** The download's failure, in one line. */
  reason: string;
  /** When the download failed (ISO 8601). */
  decidedAt: string;
}

/** Where the fallback decision is remembered: delete the file to try the download again. */
export function fallbackPath(dataDir: string): string {
  return join(resolve(dataDir), 'database-fallback.json');
}

/** The remembered fallback on DATA_DIR, or undefined when none is (or the file is unreadable). */
export function readFallback(dataDir: string): FerretDbFallback | undefined {
  try {
    const parsed = JSON.parse(readFileSync(fallbackPath(dataDir), 'utf8')) as Record<string, unknown>;
    if (parsed.database !== 'ferretdb') return undefined;
    const text = (value: unknown) => (typeof value === 'string' ? value : 'unknown');
    return { database: 'ferretdb', reason: text(parsed.reason), decidedAt: text(parsed.decidedAt) };
  } catch {
    return undefined;
  }
}

/** Remembers on DATA_DIR that MongoDB could not be downloaded, so that later starts skip the attempt. */
export function rememberFallback(dataDir: string, reason: string, now: Date = new Date()): FerretDbFallback {
  const fallback: FerretDbFallback = { database: 'ferretdb', reason, decidedAt: now.toISOString() };
  mkdirSync(resolve(dataDir), { recursive: true });
  writeFileSync(fallbackPath(dataDir), `${JSON.stringify(fallback, null, 2)}\n`);
  return fallback;
}

/** An error's message on one line, without the library's "Details:" framing, for a log line. */
function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s*Details:\s*/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 300);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The address of an embedded server that another process of ours is running on DATA_DIR, if any. */
function runningEmbedded(dataDir: string): string | undefined {
  const file = embeddedInfoPath(dataDir);
  if (!existsSync(file)) return undefined;
  try {
    const info = JSON.parse(readFileSync(file, 'utf8')) as EmbeddedInfo;
    return processAlive(info.pid) ? info.uri : undefined;
  } catch {
    return undefined;
  }
}

interface Started {
  uri: string;
  kind: DatabaseKind;
  stop: () => Promise<void>;
}

/** Starts the bundled FerretDB (or finds it running); it runs on after this process, like a database server. */
async function startFerretDb(dataDir: string, why: string): Promise<Started> {
  const missing = localFerretDbMissing();
  if (missing) {
    throw new DatabaseStartError(
      `${why}, and the bundled FerretDB cannot stand in for it (${missing}).\n` +
        `Set MONGODB_URI to a MongoDB 6+ server, or install Go and PostgreSQL; delete ${fallbackPath(dataDir)} to try the download again.`,
    );
  }
  try {
    // scripts/ferretdb.sh stop ends it.
    return { uri: await startLocalFerretDb(), kind: 'ferretdb', stop: () => Promise.resolve() };
  } catch (error) {
    throw new DatabaseStartError(
      `${why}, and the bundled FerretDB did not start either (${oneLine(error)}).\n` +
        `Set MONGODB_URI to a MongoDB 6+ server, or check PostgreSQL on 127.0.0.1:5432; delete ${fallbackPath(dataDir)} to try the download again.`,
    );
  }
}

/** `version`: the pinned MongoDB (MONGOMS_VERSION, config/env.ts). */
async function startEmbedded(dataDir: string, version: string, log: Logger): Promise<Started> {
  const remembered = readFallback(dataDir);
  if (remembered) {
    const file = fallbackPath(dataDir);
    log.info(
      { database: 'ferretdb', fallbackFile: file },
      `database: the bundled FerretDB on the local PostgreSQL, because MongoDB could not be downloaded (${remembered.decidedAt}: ${remembered.reason}); delete ${file} to try the download again`,
    );
    return startFerretDb(dataDir, `MongoDB could not be downloaded (${remembered.decidedAt})`);
  }
  const dbPath = join(resolve(dataDir), 'mongodb');
  mkdirSync(dbPath, { recursive: true });
  // Loaded only here: it is not needed when MONGODB_URI is set.
  const { MongoBinary, MongoMemoryServer } = await import('mongodb-memory-server');
  try {
    // The binary first, on its own: its failure is the one expected condition (no internet) that the
    // FerretDB fallback answers and that is remembered. MongoMemoryServer.create would also print it
    // with its stack trace.
    await MongoBinary.getPath({ version });
  } catch (error) {
    const reason = oneLine(error);
    if (localFerretDbMissing()) return startFerretDb(dataDir, `MongoDB could not be downloaded (${reason})`);
    const file = fallbackPath(dataDir);
    rememberFallback(dataDir, reason);
    log.warn(
      { database: 'ferretdb', reason, fallbackFile: file },
      `database: the bundled FerretDB on the local PostgreSQL, because MongoDB could not be downloaded (${reason}); remembered in ${file} (delete it to try the download again). FerretDB's first start builds it, which takes a few minutes`,
    );
    return startFerretDb(dataDir, `MongoDB could not be downloaded (${reason})`);
  }
  let server: InstanceType<typeof MongoMemoryServer>;
  try {
    server = await MongoMemoryServer.create({
      instance: { dbPath, storageEngine: 'wiredTiger', port: EMBEDDED_PORT, ip: '127.0.0.1' },
      binary: { version },
    });
  } catch (error) {
    throw new DatabaseStartError(`Could not start the embedded MongoDB under ${dbPath}: ${oneLine(error)}\nSet MONGODB_URI to a MongoDB 6+ server, or free port ${EMBEDDED_PORT}.`);
  }
  const uri = server.getUri();
  const infoFile = embeddedInfoPath(dataDir);
  writeFileSync(infoFile, JSON.stringify({ uri, pid: process.pid } satisfies EmbeddedInfo));
  log.info({ database: 'embedded-mongodb', dbPath }, `database: the embedded MongoDB under ${dbPath}, because MONGODB_URI is unset`);
  return {
    uri,
    kind: 'embedded-mongodb',
    stop: async () => {
      rmSync(infoFile, { force: true });
      await server.stop({ doCleanup: false });
    },
  };
}

/** The database a connection string names in its path (`mongodb://host/mydb` → `mydb`), else `fallback`. */
export function databaseName(uri: string, fallback: string): string {
  const named = decodeURIComponent(new ConnectionString(uri).pathname.replace(/^\//, ''));
  return named || fallback;
}

/**
 * Driver options: while the database is unreachable an operation waits at most `timeoutMs` for a server
 * (the driver's default is 30 s) and then fails, which the API answers as 503 with Retry-After.
 */
export function clientOptions(timeoutMs: number): MongoClientOptions {
  return { serverSelectionTimeoutMS: timeoutMs, connectTimeoutMS: timeoutMs, maxPoolSize: 50 };
}

export async function connectDatabase(config: Pick<Config, 'mongodbUri' | 'mongodbDb' | 'dataDir' | 'dbTimeoutMs' | 'embeddedMongoVersion'>, log: Logger): Promise<Database> {
  let started: Started;
  const running = config.mongodbUri ? undefined : runningEmbedded(config.dataDir);
  if (config.mongodbUri) {
    started = { uri: config.mongodbUri, kind: 'mongodb-uri', stop: () => Promise.resolve() };
    log.info({ database: 'mongodb-uri' }, `database: ${redactUri(config.mongodbUri)}, because MONGODB_URI is set`);
  } else if (running) {
    started = { uri: running, kind: 'embedded-mongodb', stop: () => Promise.resolve() };
    log.info({ database: 'embedded-mongodb' }, `database: the embedded MongoDB another process runs on ${resolve(config.dataDir)} (${embeddedInfoPath(config.dataDir)})`);
  } else {
    started = await startEmbedded(config.dataDir, config.embeddedMongoVersion, log);
  }
  const { uri, kind, stop } = started;
  const client = new MongoClient(uri, clientOptions(config.dbTimeoutMs));
  try {
    await client.connect();
  } catch (error) {
    await stop();
    throw new DatabaseStartError(`Could not connect to MongoDB at ${redactUri(uri)}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return {
    client,
    db: client.db(databaseName(uri, config.mongodbDb)),
    uri,
    kind,
    close: async () => {
      await client.close();
      await stop();
    },
  };
}

/** A connection string without its password, for messages and logs. */
export function redactUri(uri: string): string {
  return uri.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}
