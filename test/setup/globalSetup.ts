/**
 * One database server for the whole run: MONGODB_URI when set (CI here: FerretDB on PostgreSQL),
 * otherwise a throw-away mongodb-memory-server, loaded only then. Where MongoDB cannot be downloaded (no
 * internet) the project's FerretDB stands in, as for `npm start`. Each suite works in a database of its own.
 */
import { MongoClient } from 'mongodb';
import type { MongoMemoryServer } from 'mongodb-memory-server';
import { localFerretDbMissing, startLocalFerretDb } from '../../src/db/localFerretDb';
import { buildGoPrograms } from '../helpers/goPrograms';

declare global {
   
  var __MONGO_SERVER__: MongoMemoryServer | undefined;
}

export default async function globalSetup(): Promise<void> {
  // The Go programs build (or are found built for this tree) while the database starts.
  const goBuilt = buildGoPrograms((line) => process.stderr.write(line));
  if (!process.env.MONGODB_URI) await startServer();
  // Suites that hold only on MongoDB (explain plans) read this; the workers inherit the environment.
  const client = new MongoClient(process.env.MONGODB_URI ?? '');
  try {
    const info = await client.db('admin').command({ buildInfo: 1 });
    process.env.TEST_DATABASE_KIND = typeof info.ferretdbVersion === 'string' ? 'ferretdb' : 'mongodb';
  } finally {
    await client.close();
  }
  await goBuilt;
}

async function startServer(): Promise<void> {
  try {
    const { MongoMemoryServer } = await import('mongodb-memory-server');
    const server = await MongoMemoryServer.create();
    globalThis.__MONGO_SERVER__ = server;
    process.env.MONGODB_URI = server.getUri();
  } catch (error) {
    const missing = localFerretDbMissing();
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    if (missing) throw new Error(`No MONGODB_URI, no embedded MongoDB (${reason}), and no FerretDB to stand in (${missing}). Set MONGODB_URI.`, { cause: error });
    process.stderr.write(`\nThe embedded MongoDB could not be started (${reason}); using the bundled FerretDB on the local PostgreSQL (the first run builds it: a few minutes).\n`);
    process.env.MONGODB_URI = await startLocalFerretDb();
  }
}
