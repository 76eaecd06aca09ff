/**
 * The monthly cap is exact under concurrency, within one process and across two processes on one
 * database, and nothing is stored for a 429. The clock is injected to cross a month boundary.
 */
import { call, createEvent, eventBody } from '../helpers/api';
import { expectGapless, fill, metric, statuses, twoProcessesOnOneDatabase } from '../helpers/cluster';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { v7 as uuidv7 } from 'uuid';
import { hashApiKey } from '../../src/domain/apiKey';

/**
 * Sixty creates at once, alternating over `urls`, for an organization with room for ten more under a
 * cap of 30: exactly ten are stored (the ones answered 201), fifty refused, and the sequence is 1…30.
 */
async function raceToTheCap(app: TestApp, org: TestOrg, urls: string[]): Promise<void> {
  const results = await Promise.all(
    Array.from({ length: 60 }, (_, i) => call(`${urls[i % urls.length] ?? ''}/v1/events`, { key: org.key, body: eventBody({ actor: { id: `racer_${i}` } }) })),
  );
  expect(statuses(results)).toEqual({ 201: 10, 429: 50 });
  const stored = await app.collections.events.find({ tenant: org.id, actor_id: /^racer_/ }).toArray();
  expect(new Set(stored.map((d) => d._id))).toEqual(new Set(results.filter((r) => r.status === 201).map((r) => r.body.event.id)));
  await expectGapless(app, org, 30);
}

describe('in one process', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ label: 'cap', planCaps: { free: 5, pro: 7, enterprise: 1000 } });
  });
  afterAll(() => app.close());

  test('with room for 10 more, 60 concurrent creates give exactly 10 × 201 and 50 × 429', async () => {
    const org = await app.org({ monthlyCap: 30 });
    await fill(app.url, org, 20);
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ actor: { id: `racer_${i}` } }) })),
    );
    expect(statuses(results)).toEqual({ 201: 10, 429: 50 });
    for (const r of results.filter((x) => x.status === 429)) {
      expect(r.body).toEqual({ message: 'Monthly event limit reached', code: 'MONTHLY_LIMIT_REACHED' });
    }
    // Exactly the acknowledged events are stored: the 201s' ids, and no event of a 429.
    const stored = await app.collections.events.find({ tenant: org.id, actor_id: /^racer_/ }).toArray();
    expect(new Set(stored.map((d) => d._id))).toEqual(new Set(results.filter((r) => r.status === 201).map((r) => r.body.event.id)));
    await expectGapless(app, org, 30);
  });

  test('the plan decides the cap; an organization cap overrides it', async () => {
    const free = await app.org({ plan: 'free' });
    await fill(app.url, free, 5);
    expect((await call(`${app.url}/v1/events`, { key: free.key, body: eventBody() })).status).toBe(429);
    const pro = await app.org({ plan: 'pro' });
    await fill(app.url, pro, 7);
    expect((await call(`${app.url}/v1/events`, { key: pro.key, body: eventBody() })).status).toBe(429);
    const custom = await app.org({ plan: 'free', monthlyCap: 8 });
    await fill(app.url, custom, 8);
    expect((await call(`${app.url}/v1/events`, { key: custom.key, body: eventBody() })).status).toBe(429);
  });

  test('events an organization_id override sends count against the key organization', async () => {
    const owner = await app.org({ monthlyCap: 2 });
    const other = await app.org({ monthlyCap: 2 });
    await fill(app.url, owner, 1);
    expect((await call(`${app.url}/v1/events`, { key: owner.key, body: eventBody({ organization_id: other.id }) })).status).toBe(201);
    expect((await call(`${app.url}/v1/events`, { key: owner.key, body: eventBody({ organization_id: other.id }) })).status).toBe(429);
    // The named organization's own room is untouched.
    await fill(app.url, other, 2);
  });

  test('a second key of the same organization shares its cap', async () => {
    const org = await app.org({ monthlyCap: 3 });
    const second = await app.key(org.id);
    await fill(app.url, org, 2);
    await fill(app.url, { ...org, key: second.key }, 1);
    expect((await call(`${app.url}/v1/events`, { key: second.key, body: eventBody() })).status).toBe(429);
  });
});

describe('by UTC calendar month of receipt', () => {
  let now = new Date('2026-01-31T23:59:59.000Z');
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ label: 'capmonth', clock: { now: () => now } });
  });
  afterAll(() => app.close());

  test('the cap resets when the month turns, and a backdated or future timestamp does not matter', async () => {
    const org = await app.org({ monthlyCap: 2 });
    await fill(app.url, org, 2);
    const refused = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ timestamp: '2026-03-15T00:00:00Z' }) });
    expect(refused.status).toBe(429);
    now = new Date('2026-02-01T00:00:00.000Z');
    const backdated = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ timestamp: '2025-12-01T00:00:00Z' }) });
    expect(backdated.status).toBe(201);
    expect(backdated.body.event.timestamp).toBe('2025-12-01T00:00:00.000Z');
    await fill(app.url, org, 1);
    expect((await call(`${app.url}/v1/events`, { key: org.key, body: eventBody() })).status).toBe(429);
    const docs = await app.collections.events.find({ tenant: org.id }).sort({ seq: 1 }).toArray();
    expect(docs.map((d) => [d.seq, d.month, d.month_seq])).toEqual([
      [1, '2026-01', 1],
      [2, '2026-01', 2],
      [3, '2026-02', 1],
      [4, '2026-02', 2],
    ]);
  });
});

describe('an operator\'s cap change (by hand, in the database)', () => {
  let now = new Date('2026-05-10T12:00:00.000Z');
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ label: 'capchange', clock: { now: () => now } });
  });
  afterAll(() => app.close());
  const later = (ms: number) => { now = new Date(now.getTime() + ms); };
  const setCap = (org: TestOrg, cap: number) => app.collections.orgs.updateOne({ _id: org.id }, { $set: { monthly_cap: cap } });
  const create = async (org: TestOrg) => (await call(`${app.url}/v1/events`, { key: org.key, body: eventBody() })).status;

  test('a raised cap applies before the old one refuses anything, and within the door\'s 10 s after', async () => {
    const org = await app.org({ monthlyCap: 2 });
    await fill(app.url, org, 1); // the cap (2) is read now
    await setCap(org, 4);
    // Most of a minute later the cap in hand is still 2, and would refuse the third event: it is read again first.
    later(50_000);
    await fill(app.url, org, 3);
    expect(await create(org)).toBe(429);
    await setCap(org, 5);
    // Refused at the door, without a database round, for 10 s.
    later(9_000);
    expect(await create(org)).toBe(429);
    later(1_001);
    expect(await create(org)).toBe(201);
    expect(await app.collections.events.countDocuments({ tenant: org.id })).toBe(5);
  });

  test('a lowered cap applies within a minute', async () => {
    const org = await app.org({ monthlyCap: 6 });
    await fill(app.url, org, 4);
    await setCap(org, 1);
    // The cap read a moment ago (6) still has room, and counts for up to a minute.
    expect(await create(org)).toBe(201);
    later(60_000);
    expect(await create(org)).toBe(429);
    expect(await app.collections.events.countDocuments({ tenant: org.id })).toBe(5);
  });
});

describe('two independent writers on one database (instances that do not yet see each other)', () => {
  // Two services on one database that have not joined the instance list both write every organization
  // themselves: the unique (tenant, seq) index alone keeps the cap exact and the sequence gapless.
  let one: TestApp;
  let two: TestApp;
  beforeAll(async () => {
    one = await startTestApp({ label: 'capraces' });
    two = await startTestApp({ label: 'capraces', sharedDbName: one.dbName });
  });
  afterAll(async () => {
    await two.close();
    await one.close();
  });

  test('60 concurrent creates split over both: exactly 10 × 201 and 50 × 429, sequence without gaps', async () => {
    const org = await one.org({ monthlyCap: 30 });
    await fill(one.url, org, 10);
    // Now writer one's idea of the newest event is ten events stale: its next batch must lose a race.
    await fill(two.url, org, 10);
    await raceToTheCap(one, org, [one.url, two.url]);
    expect(one.services.ingest.stats.conflicts).toBeGreaterThan(0);
  });

  test('one event (one id) written through both writers at once, and twice through one, is stored once', async () => {
    const org = await one.org({ monthlyCap: 1000 });
    await fill(one.url, org, 3);
    const now = new Date();
    const draft = {
      _id: uuidv7(), tenant: org.id, ts: now, received_at: now, actor_id: 'retrying_client', actor_name: null, actor_email: null,
      action: 'invoice.paid', resource_type: 'invoice', resource_id: 'inv_9', resource_name: null, metadata: '{}',
      organization_id: org.id, api_key_id: org.keyId,
    };
    const hash = hashApiKey(org.key);
    const docs = (await Promise.all([one, one, two, two].map((app) => app.services.ingest.write({ drafts: [{ ...draft }], keyHash: hash, capExempt: false })))).flat();
    // Every caller is answered with the one stored event: same id, same place in the sequence.
    expect(new Set(docs.map((d) => `${d._id}@${d.seq}`)).size).toBe(1);
    expect(await one.collections.events.countDocuments({ tenant: org.id, _id: draft._id })).toBe(1);
    await expectGapless(one, org, 4);
    expect(one.services.ingest.stats.duplicates + two.services.ingest.stats.duplicates).toBeGreaterThanOrEqual(3);
    // The next event still takes the next number.
    await fill(two.url, org, 1);
    await expectGapless(one, org, 5);
  });

  test('a writer that has never seen an organization finds its newest event by probing, and continues it', async () => {
    const org = await one.org({ monthlyCap: 1000 });
    await fill(one.url, org, 37);
    const conflicts = two.services.ingest.stats.conflicts;
    const next = await createEvent(two.url, org.key);
    // Found, not stumbled upon: a writer that guessed would lose a race for every number it tried.
    expect(two.services.ingest.stats.conflicts).toBe(conflicts);
    const doc = await one.collections.events.findOne({ tenant: org.id, _id: next.id });
    expect(doc?.seq).toBe(38);
    expect(doc?.month_seq).toBe(38);
    await expectGapless(one, org, 38);
  });
});

/**
 * Two `src/main.ts` processes on one test database, started before the describe block's tests once
 * each has seen the other at a heartbeat, and stopped after them.
 */
describe('across two server processes on one database', () => {
  const cluster = twoProcessesOnOneDatabase('captwo');

  async function totals(name: string): Promise<number> {
    let sum = 0;
    for (const server of cluster.servers()) sum += await metric(server.metricsUrl, name);
    return sum;
  }

  test('60 concurrent creates split over both: exactly 10 × 201 and 50 × 429, one writer, no races', async () => {
    const app = cluster.app();
    const org = await app.org({ monthlyCap: 30 });
    const [one, two] = cluster.servers();
    await fill(one.url, org, 10);
    await fill(two.url, org, 10);
    const forwardedBefore = await totals('ingest_events_forwarded_total');
    const conflictsBefore = await totals('ingest_sequence_conflicts_total');
    await raceToTheCap(app, org, [one.url, two.url]);
    // Half the requests reached the instance that does not write this organization: it forwarded them
    // (the 429s included) to the one that does, so no sequence number was ever contested.
    expect((await totals('ingest_events_forwarded_total')) - forwardedBefore).toBeGreaterThanOrEqual(10);
    expect((await totals('ingest_sequence_conflicts_total')) - conflictsBefore).toBe(0);
  });

  test('both processes keep writing one gapless sequence when neither is at the cap', async () => {
    const app = cluster.app();
    const org = await app.org({ monthlyCap: 1000 });
    const [one, two] = cluster.servers();
    const results = await Promise.all(
      Array.from({ length: 80 }, (_, i) => call(`${(i % 2 ? one : two).url}/v1/events`, { key: org.key, body: eventBody() })),
    );
    expect(statuses(results)).toEqual({ 201: 80 });
    await expectGapless(app, org, 80);
  });
});

describe('when the instance that writes an organization dies', () => {
  const cluster = twoProcessesOnOneDatabase('capdie');

  test('the survivor writes its events itself: every later request is stored, the sequence stays gapless', async () => {
    const app = cluster.app();
    const org = await app.org({ monthlyCap: 1000 });
    const [one, two] = cluster.servers();
    await fill(one.url, org, 10);
    // Whichever of the two writes this organization is killed, the other is left alone.
    const writer = (await metric(one.metricsUrl, 'ingest_events_total')) > 0 ? one : two;
    const survivor = writer === one ? two : one;
    await fill(survivor.url, org, 5);
    // Until now the survivor sent this organization's events to the writer.
    expect(await metric(survivor.metricsUrl, 'ingest_events_forwarded_total')).toBeGreaterThan(0);
    expect(await metric(survivor.metricsUrl, 'ingest_events_total')).toBe(0);
    writer.child.kill('SIGKILL');
    await new Promise((resolve) => writer.child.once('exit', resolve));
    const after = [];
    for (let i = 0; i < 20; i++) after.push(await call(`${survivor.url}/v1/events`, { key: org.key, body: eventBody() }));
    expect(after.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 201));
    expect(await metric(survivor.metricsUrl, 'ingest_events_total')).toBe(20);
    await expectGapless(app, org, 35);
  });
});
