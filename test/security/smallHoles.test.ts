/**
 * Smaller holes (review item 11): a proof waits for its checkpoint at most a few seconds whatever the
 * checkpoint interval, and the dashboard's proof procedures are rate-limited like API keys. (The capped
 * organization's Idempotency-Key refused at the door is in `hardening`; the import state file in `import`.)
 */
import { call, eventBody } from '../helpers/api';
import { startTestApp, type TestApp } from '../helpers/harness';
import { uniqueEmail, WebSession } from '../helpers/webSession';

let app: TestApp;
beforeAll(async () => {
  // A ten-minute checkpoint interval, and a rate (per key and per session) of bursts of 3 refilled one
  // per 100 s: nothing refills while the test runs, however slow the machine.
  app = await startTestApp({ label: 'smallholes', ledgerIntervalMs: 600_000, limits: { ratePerSecond: 0.01, rateBurst: 3 } });
});
afterAll(() => app.close());

test('a proof of a new event is answered with its checkpoint though the interval is ten minutes', async () => {
  const org = await app.org();
  const created = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody() });
  expect(created.status).toBe(201);
  // Answered at all within the test's timeout (well under the interval): it did not wait for the next round.
  const proof = await call(`${app.url}/v1/events/${created.body.event.id}/proof`, { key: org.key });
  expect(proof.status).toBe(200);
  expect(proof.body.tree_size).toBe(1);
}, 60_000);

test('the dashboard\'s proof procedures are rate-limited per session', async () => {
  const web = new WebSession(app.url);
  await web.signup(uniqueEmail('ratelimited'));
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push((await web.raw('dashboard.ledger.consistency', { from: 0 }, { method: 'GET' })).status);
  // The burst of 3 (less any call the sign-up made), then 429 for every call.
  const firstRefused = statuses.indexOf(429);
  expect(firstRefused).toBeGreaterThanOrEqual(1);
  expect(firstRefused).toBeLessThanOrEqual(3);
  expect(statuses.slice(0, firstRefused).every((s) => s === 404 || s === 200)).toBe(true);
  expect(statuses.slice(firstRefused).every((s) => s === 429)).toBe(true);
  const limited = await web.raw('dashboard.events.proof', { id: '00000000-0000-7000-8000-000000000000' }, { method: 'GET' });
  expect(limited.status).toBe(429);
  expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  // Per session: another one is not held up.
  const other = new WebSession(app.url);
  await other.signup(uniqueEmail('other'));
  expect((await other.raw('dashboard.events.proof', { id: '00000000-0000-7000-8000-000000000000' }, { method: 'GET' })).status).toBe(404);
});
