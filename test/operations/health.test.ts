/** Liveness and readiness: /readyz follows the database, /healthz only the process. */
import { MongoClient } from 'mongodb';
import { createHttpApp } from '../../src/http/app';
import { createLogger } from '../../src/logger';
import { createServices } from '../../src/services/container';
import { listenOnFreePort, mongoUri, uniqueDbName } from '../helpers/harness';
import { loadConfig } from '../../src/config/env';

test('readyz answers 503 once the database is gone; healthz stays 200', async () => {
  const client = new MongoClient(mongoUri(), { serverSelectionTimeoutMS: 500 });
  await client.connect();
  const db = client.db(uniqueDbName('health'));
  const services = await createServices(db, loadConfig({}), { now: () => new Date() }, createLogger('silent'));
  const { server, url } = await listenOnFreePort(createHttpApp(services.http).listener);
  try {
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    await db.dropDatabase();
    await client.close();
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toBe('2');
    expect(await ready.json()).toEqual({ status: 'unavailable', message: 'Database is not reachable' });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    // A request that needs the database gets a 503 to retry later, not a 500 and not a stack.
    const read = await fetch(`${url}/v1/events`, { headers: { authorization: 'Bearer alk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } });
    expect(read.status).toBe(503);
    expect(read.headers.get('retry-after')).toBe('2');
    expect(await read.json()).toEqual({ message: 'The database is not reachable; retry later', code: 'SERVICE_UNAVAILABLE' });
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
