/**
 * Database connection: MONGODB_URI when given, otherwise an embedded MongoDB (mongodb-memory-server)
 * whose files live under DATA_DIR, so a restart keeps every event. The embedded server's address is
 * written to DATA_DIR so that the CLI talks to the running instance instead of starting a second one.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { MongoClient, type Db, type MongoClientOptions } from 'mongodb';
import { ConnectionString } from 'mongodb-connection-string-url';
import type { Logger } from 'pino';
import type { Config } from '../config/env';
import { localFerretDbMissing, startLocalFerretDb } from './localFerretDb';

export interface Database {
  client: MongoClient;
  db: Db;
  uri: string;
  embedded: boolean;
  close(): Promise<void>;
}

export class DatabaseStartError extends Error {
  override readonly name = 'DatabaseStartError';
}

const EMBEDDED_PORT = 27117;
// Pinned: the data files under DATA_DIR must keep opening after a dependency upgrade.
const EMBEDDED_VERSION = process.env.MONGOMS_VERSION ?? '7.0.14';

interface EmbeddedInfo {
  uri: string;
  pid: number;
}

function embeddedInfoPath(dataDir: string): string {
  return join(resolve(dataDir), 'embedded-mongodb.json');
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

async function startEmbedded(dataDir: string, log: Logger): Promise<{ uri: string; stop: () => Promise<void> }> {
  const dbPath = join(resolve(dataDir), 'mongodb');
  mkdirSync(dbPath, { recursive: true });
  log.info({ dbPath }, 'starting embedded MongoDB (mongodb-memory-server); the first start downloads MongoDB');
  let embeddedError: unknown;
  try {
    // Loaded only here: it is not needed when MONGODB_URI is set.
    const { MongoMemoryServer } = await import('mongodb-memory-server');
    const server = await MongoMemoryServer.create({
      instance: { dbPath, storageEngine: 'wiredTiger', port: EMBEDDED_PORT, ip: '127.0.0.1' },
      binary: { version: EMBEDDED_VERSION },
    });
    const uri = server.getUri();
    const infoFile = embeddedInfoPath(dataDir);
    writeFileSync(infoFile, JSON.stringify({ uri, pid: process.pid } satisfies EmbeddedInfo));
    return {
      uri,
      stop: async () => {
        rmSync(infoFile, { force: true });
        await server.stop({ doCleanup: false });
      },
    };
  } catch (error) {
    embeddedError = error;
  }
  const reason = embeddedError instanceof Error ? embeddedError.message.split('\n')[0] : String(embeddedError);
  const missing = localFerretDbMissing();
  if (missing) {
    throw new DatabaseStartError(
      `Could not start the embedded MongoDB: ${reason}\n` +
        `The bundled FerretDB cannot stand in for it either (${missing}). Set MONGODB_URI to a MongoDB 6+ server, or install Go and PostgreSQL.`,
    );
  }
  log.warn({ reason }, 'the embedded MongoDB could not be started (no internet?): starting the bundled FerretDB on the local PostgreSQL instead; its first start builds it, which takes a few minutes');
  try {
    // It runs on after this process, like a database server: scripts/ferretdb.sh stop ends it.
    return { uri: await startLocalFerretDb(), stop: () => Promise.resolve() };
  } catch (error) {
    throw new DatabaseStartError(
      `Could not start the embedded MongoDB (${reason}) nor the bundled FerretDB (${error instanceof Error ? error.message : String(error)}).\n` +
        'Set MONGODB_URI to a MongoDB 6+ server.',
    );
  }
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

export async function connectDatabase(config: Pick<Config, 'mongodbUri' | 'mongodbDb' | 'dataDir' | 'dbTimeoutMs'>, log: Logger): Promise<Database> {
  let uri = config.mongodbUri ?? runningEmbedded(config.dataDir);
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!uri) {
    const embedded = await startEmbedded(config.dataDir, log);
    uri = embedded.uri;
    stopEmbedded = embedded.stop;
  }
  const client = new MongoClient(uri, clientOptions(config.dbTimeoutMs));
  try {
    await client.connect();
  } catch (error) {
    await stopEmbedded?.();
    throw new DatabaseStartError(`Could not connect to MongoDB at ${redactUri(uri)}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return {
    client,
    db: client.db(databaseName(uri, config.mongodbDb)),
    uri,
    embedded: !config.mongodbUri,
    close: async () => {
      await client.close();
      await stopEmbedded?.();
    },
  };
}

/** A connection string without its password, for messages and logs. */
export function redactUri(uri: string): string {
  return uri.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}
