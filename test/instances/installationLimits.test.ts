/**
 * Limits hold per installation, not per process (issue 22): with two instances behind a balancer, a key
 * gets the documented rate from both together (each process's buckets give half), and an organization
 * runs at most EXPORTS_PER_ORG exports across the installation (a slot is a lease in the database).
 */
import { call, eventBody } from '../helpers/api';
import { twoProcessesOnOneDatabase } from '../helpers/cluster';
import { eventually } from '../helpers/waiting';

const RATE = 20;
const cluster = twoProcessesOnOneDatabase('limits', { RATE_LIMIT_PER_SECOND: String(RATE), RATE_LIMIT_BURST: String(RATE), EXPORTS_PER_ORG: '1' });

test('a key gets the rate limit from two instances together, not twice it', async () => {
  const org = await cluster.app().org();
  const [a, b] = cluster.servers();
  const started = performance.now();
  // Six times the burst, spread over both instances as a balancer would.
  const results = await Promise.all(Array.from({ length: 6 * RATE }, (_, i) => call(`${(i % 2 ? a : b).url}/v1/events?limit=1`, { key: org.key })));
  const seconds = (performance.now() - started) / 1000;
  const allowed = results.filter((r) => r.status === 200).length;
  expect(results.filter((r) => r.status !== 200 && r.status !== 429)).toEqual([]);
  // The burst, plus what the rate refills while the requests ran (each instance rounds its half up by one);
  // per process, each would have given a whole burst and its own refill: about twice that.
  expect(allowed).toBeGreaterThanOrEqual(RATE - 2);
  expect(allowed).toBeLessThanOrEqual(RATE + Math.ceil(RATE * seconds) + 2);
  const refused = results.find((r) => r.status === 429);
  expect(refused?.headers.get('ratelimit-policy')).toBe(`"per-key";q=${RATE};w=1`);
});

test('an organization runs at most EXPORTS_PER_ORG exports across the installation; a finished one gives its slot back', async () => {
  const org = await cluster.app().org();
  const [a, b] = cluster.servers();
  // Enough events that an export waits for its client (a few MB: more than the sockets buffer).
  for (let batch = 0; batch < 5; batch++) {
    const res = await call(`${a.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: 1000 }, (_, i) => eventBody({ metadata: { n: batch * 1000 + i, pad: 'x'.repeat(400) } })) } });
    expect(res.status).toBe(201);
  }
  // An export held open on one instance (its client reads nothing yet)...
  const held = new AbortController();
  const first = await fetch(`${a.url}/v1/events/export?format=json`, { headers: { authorization: `Bearer ${org.key}` }, signal: held.signal });
  expect(first.status).toBe(200);
  // ...takes the organization's one slot on the other instance too.
  const second = await call(`${b.url}/v1/events/export?format=json`, { key: org.key });
  expect(second.status).toBe(429);
  expect(second.body.code).toBe('TOO_MANY_EXPORTS');
  // Read to the end, it gives the slot back.
  await first.text();
  const third = await eventually('the slot given back', async () => {
    const res = await call(`${b.url}/v1/events/export?format=json`, { key: org.key });
    return res.status !== 429 && res;
  }, 5_000);
  expect(third.status).toBe(200);
});
