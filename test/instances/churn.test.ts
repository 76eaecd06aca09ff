/**
 * Instances come and go while load runs (issue 22): server processes on one database, a new one started
 * and the oldest stopped every few seconds, while clients send events to whichever instances are up,
 * each event with an Idempotency-Key and retried elsewhere when its instance goes away. Afterwards every
 * acknowledged event is stored exactly once, nothing else is stored, and the sequence is gapless.
 */
import { call, eventBody } from '../helpers/api';
import { expectGapless } from '../helpers/cluster';
import { startTestApp, type TestApp } from '../helpers/harness';
import { type ServerProcess, startServerProcess } from '../helpers/processes';
import { pace } from '../helpers/waiting';

const SECONDS = 15;
const CHURN_EVERY_MS = 3000;
const CLIENTS = 8;
const MIN_CHURNS = 3;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ label: 'churn' });
});
afterAll(() => app.close());

test(`instances started and stopped every ${CHURN_EVERY_MS / 1000} s under load: every acknowledged event stored once, gapless`, async () => {
  const org = await app.org();
  // The per-key rate limit is not what this is about.
  const env = { MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName, RATE_LIMIT_PER_SECOND: '100000', RATE_LIMIT_BURST: '100000' };
  const up: ServerProcess[] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
  const all = [...up];
  const deadline = Date.now() + SECONDS * 1000;
  const acknowledged = new Map<number, string>();
  let churns = 0;
  let retries = 0;

  // At least three changes however slow the machine is (a busy CI machine starts a process in seconds):
  // the clients run until the churn is done.
  let churning = true;
  const churn = (async () => {
    while (Date.now() < deadline || churns < MIN_CHURNS) {
      await pace(CHURN_EVERY_MS, 'the churn\'s cadence: each set of instances carries the load this long before one is replaced');
      const started = await startServerProcess(env);
      all.push(started);
      up.push(started);
      const oldest = up.shift();
      await oldest?.stop();
      churns++;
    }
    churning = false;
  })();

  let next = 0;
  const client = async () => {
    while (churning) {
      const n = next++;
      for (let attempt = 0; ; attempt++) {
        const target = up[(n + attempt) % up.length];
        if (!target) continue;
        const res = await call(`${target.url}/v1/events`, { key: org.key, body: eventBody({ metadata: { n } }), headers: { 'idempotency-key': `churn-${n}` } }).catch(() => null);
        if (res?.status === 201) {
          acknowledged.set(n, (res.body as { event: { id: string } }).event.id);
          break;
        }
        // The instance went away or answered 503: the same key, elsewhere (nothing is stored twice).
        expect(res === null || res.status === 503).toBe(true);
        retries++;
        if (attempt > 50) throw new Error(`event ${n} was never acknowledged`);
        await pace(50, 'a client\'s retry, elsewhere, of a write the instance going away refused');
      }
    }
  };
  try {
    await Promise.all([churn, ...Array.from({ length: CLIENTS }, client)]);
  } finally {
    await Promise.all(all.map((s) => s.stop()));
  }

  expect(churns).toBeGreaterThanOrEqual(MIN_CHURNS);
  const stored = await app.collections.events.find({ tenant: org.id }, { projection: { _id: 1, metadata: 1 } }).toArray();
  // Every acknowledged event, under the id it was acknowledged with, and nothing else.
  expect(stored.map((d) => d._id).sort()).toEqual([...acknowledged.values()].sort());
  const markers = stored.map((d) => (JSON.parse(d.metadata) as { n: number }).n);
  expect(new Set(markers).size).toBe(markers.length);
  await expectGapless(app, org, acknowledged.size);
  console.log(`churn: ${acknowledged.size} events acknowledged over ${churns} instance changes, ${retries} retried on another instance; stored once each, gapless`);
}, 240_000);
