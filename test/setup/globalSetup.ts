/**
 * One database server for the whole run: MONGODB_URI when set (CI here: FerretDB on PostgreSQL),
 * otherwise a throw-away mongodb-memory-server. Each suite then works in a database of its own.
 */
import { MongoMemoryServer } from 'mongodb-memory-server';

declare global {
  // eslint-disable-next-line no-var
  var __MONGO_SERVER__: MongoMemoryServer | undefined;
}

export default async function globalSetup(): Promise<void> {
  if (process.env.MONGODB_URI) return;
  const server = await MongoMemoryServer.create();
  globalThis.__MONGO_SERVER__ = server;
  process.env.MONGODB_URI = server.getUri();
}
