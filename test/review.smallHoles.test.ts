/**
 * Smaller holes (review item 11): a proof waits for its checkpoint at most a few seconds whatever the
 * checkpoint interval, and the dashboard's proof procedures are rate-limited like API keys. (The capped
 * organization's Idempotency-Key refused at the door is in `hardening`; the import state file in `import`.)
 */
import { call, eventBody } from './helpers/api';
import { startTestApp, type TestApp } from './helpers/harness';
import { uniqueEmail, WebSession } from './helpers/webSession';

let app: TestApp;
beforeAll(async () => {
  // A ten-minute checkpoint interval, and a session rate of 1 per second with bursts of 3.
  app = await startTestApp({ label: 'smallholes', ledgerIntervalMs: 600_000, limits: { ratePerSecond: 1, rateBurst: 3 } });
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
  for (let i = 0; i < 6; i++) statuses.push((await web.raw('dashboard.ledger.consistency', { from: 0 }, { method: 'GET' })).status);
  // The sign-up's own session call counts too: at most 3 in the burst, then 429.
  expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(3);
  const limited = await web.raw('dashboard.events.proof', { id: '00000000-0000-7000-8000-000000000000' }, { method: 'GET' });
  expect(limited.status).toBe(429);
  expect(limited.headers.get('retry-after')).toBe('1');
  await new Promise((resolve) => setTimeout(resolve, 2100));
  expect((await web.raw('dashboard.events.proof', { id: '00000000-0000-7000-8000-000000000000' }, { method: 'GET' })).status).toBe(404);
});
