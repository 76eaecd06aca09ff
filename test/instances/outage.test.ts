/**
 * The database dies under write load and comes back. While it is gone every route answers 503 with
 * Retry-After within a bounded time (never 500, never the driver's 30 s wait) and /readyz says 503;
 * when it is back the service recovers by itself; every event acknowledged with a 201 is stored.
 */
import { call, eventBody } from '../helpers/api';
import { startDisposableDatabase, type DisposableDatabase } from '../helpers/disposableDatabase';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { eventually } from '../helpers/waiting';

const DB_TIMEOUT_MS = 1500;
/** Far above DB_TIMEOUT_MS and far below the driver's default 30 s: a wait this long means something hangs. */
const BOUND_MS = 10_000;

interface Result {
  status: number;
  ms: number;
  retryAfter: string | null;
  id?: string;
  code?: string;
}

async function timed(url: string, options: Parameters<typeof call>[1]): Promise<Result> {
  const started = Date.now();
  const res = await call(url, options);
  return {
    status: res.status,
    ms: Date.now() - started,
    retryAfter: res.headers.get('retry-after'),
    id: res.status === 201 ? res.body.event.id : undefined,
    code: typeof res.body === 'object' && res.body ? res.body.code : undefined,
  };
}

describe('a database outage under write load', () => {
  let database: DisposableDatabase;
  let app: TestApp;
  let org: TestOrg;
  beforeAll(async () => {
    database = await startDisposableDatabase();
    app = await startTestApp({ label: 'outage', uri: database.uri, dbTimeoutMs: DB_TIMEOUT_MS, limits: { ratePerSecond: 100_000, rateBurst: 100_000 }, ...(process.env.OUTAGE_LOG ? { logTo: process.stderr } : {}) });
    org = await app.org({ plan: 'pro' });
  });
  afterAll(async () => {
    await app.close();
    await database.close();
  });

  test('503 with Retry-After while it is down, bounded waits, recovery, and every acknowledged event stored', async () => {
    const writes: Result[] = [];
    let stop = false;
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        writes.push(await timed(`${app.url}/v1/events`, { key: org.key, body: eventBody({ actor: { id: `w${w}_${i}` } }) }));
      }
    });
    const seen = (from: number, status: number) => writes.slice(from).some((r) => r.status === status);

    await eventually('a write accepted', () => seen(0, 201), 5_000, 50);
    const aRead = writes.find((r) => r.status === 201)?.id as string;

    await database.kill();
    const downFrom = writes.length;
    // Once the writers are answered 503 (the pool has noticed), every surface must answer 503 within the bound.
    await eventually('a write answered 503', () => seen(downFrom, 503), 5_000, 50);
    const probes = await Promise.all([
      timed(`${app.url}/v1/events`, { key: org.key }),
      timed(`${app.url}/v1/events/${aRead}`, { key: org.key }),
      timed(`${app.url}/v1/events/export?format=csv`, { key: org.key }),
      timed(`${app.url}/trpc/events.list?input=${encodeURIComponent('{}')}`, { key: org.key }),
      timed(`${app.url}/v1/events`, { key: org.key, body: eventBody() }),
    ]);
    for (const probe of probes) {
      expect(probe).toMatchObject({ status: 503, retryAfter: '2' });
      expect(probe.ms).toBeLessThan(BOUND_MS);
    }
    expect(probes.slice(0, 3).map((p) => p.code)).toEqual(['SERVICE_UNAVAILABLE', 'SERVICE_UNAVAILABLE', 'SERVICE_UNAVAILABLE']);
    const ready = await timed(`${app.url}/readyz`, {});
    expect(ready.status).toBe(503);
    expect(ready.ms).toBeLessThan(BOUND_MS);

    await database.restart();
    await eventually('/readyz to answer 200 again', async () => (await call(`${app.url}/readyz`)).status === 200, 30_000, 500);
    const upFrom = writes.length;
    await eventually('a write accepted after the restart', () => seen(upFrom, 201), 5_000, 50);
    stop = true;
    await Promise.all(writers);

    // Only 201s and 503s, every 503 with Retry-After, no request near the driver's 30 s.
    const counts: Record<number, number> = {};
    for (const r of writes) counts[r.status] = (counts[r.status] ?? 0) + 1;
    console.log(`outage: ${JSON.stringify(counts)}; slowest write ${Math.max(...writes.map((r) => r.ms))} ms`);
    expect(Object.keys(counts).sort()).toEqual(['201', '503']);
    expect(writes.filter((r) => r.status === 503 && r.retryAfter === null)).toEqual([]);
    expect(writes.filter((r) => r.ms >= BOUND_MS)).toEqual([]);

    // Nothing acknowledged was lost, and the sequence has no gaps.
    const stored = await app.collections.events.find({ tenant: org.id }, { projection: { _id: 1, seq: 1 } }).toArray();
    const storedIds = new Set(stored.map((d) => d._id));
    expect(writes.filter((r) => r.status === 201 && !storedIds.has(r.id as string))).toEqual([]);
    expect(stored.map((d) => d.seq).sort((x, y) => x - y)).toEqual(Array.from({ length: stored.length }, (_, i) => i + 1));
  });
});
