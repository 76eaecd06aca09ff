/** Helpers for suites about ingest across processes: two server processes on one database, metrics, the sequence. */
import { createEvent } from './api';
import { startTestApp, type TestApp, type TestOrg } from './harness';
import { startServerProcess, type ServerProcess } from './processes';
import { eventually } from './waiting';

export async function fill(url: string, org: TestOrg, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await createEvent(url, org.key);
}

export async function metric(metricsUrl: string, name: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`metric ${name} not found`);
  return Number(line.split(' ')[1]);
}

export function statuses(results: { status: number }[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

/** Asserts that the organization's sequence numbers are 1…n with no gap (and n = `count`, when given); returns n. */
export async function expectGapless(app: TestApp, org: TestOrg, count?: number): Promise<number> {
  const seqs = (await app.collections.events.find({ tenant: org.id }, { projection: { seq: 1 } }).toArray()).map((d) => d.seq).sort((x, y) => x - y);
  if (count !== undefined) expect(seqs).toHaveLength(count);
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
  return seqs.length;
}

/** Two `src/main.ts` processes on the database of a test app, started before the suite and each seeing the other. */
export function twoProcessesOnOneDatabase(label: string, extraEnv: Record<string, string> = {}): { app: () => TestApp; servers: () => [ServerProcess, ServerProcess] } {
  let app: TestApp | undefined;
  let servers: ServerProcess[] = [];
  beforeAll(async () => {
    app = await startTestApp({ label });
    const env = { MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName, ...extraEnv };
    servers = await Promise.all([startServerProcess(env), startServerProcess(env)]);
    for (const server of servers) {
      await eventually(`${server.url} to see both instances live`, async () => (await metric(server.metricsUrl, 'instances_live')) >= 2, 60_000, 200);
    }
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await app?.close();
  });
  return {
    app: () => {
      if (!app) throw new Error('the processes are not started yet');
      return app;
    },
    servers: () => servers as [ServerProcess, ServerProcess],
  };
}
