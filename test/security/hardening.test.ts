/**
 * What a hostile or careless client can do, and what it must not achieve: fail or slow another
 * tenant's writes, get a 5xx, exhaust the service's memory, connections or database rounds, or read
 * the metrics. Each test would have caught one of the causes fixed in the hardening issue.
 */
import { get as httpGet, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TCreateEventInput } from '../../src/domain/event';
import { createMetricsServer } from '../../src/http/metricsServer';
import type { ApiKeyPrincipal } from '../../src/services/auth';
import { call, createEvent, eventBody, query, rawHttp } from '../helpers/api';
import { claimIdOf } from '../../src/db/idempotencyRepository';
import { expectGapless } from '../helpers/cluster';
import { MARKER_HEADER, startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { seedEvents } from '../helpers/seed';
import { uniqueEmail, WebSession } from '../helpers/webSession';
import { eventually } from '../helpers/waiting';

async function principalOf(app: TestApp, org: TestOrg): Promise<ApiKeyPrincipal> {
  const auth = await app.services.auth.authenticate(`Bearer ${org.key}`, 'write');
  if (auth.kind !== 'ok') throw new Error('test key did not authenticate');
  return auth.principal;
}

async function isFerretDb(app: TestApp): Promise<boolean> {
  const info = await app.services.db.admin().command({ buildInfo: 1 });
  return typeof info.ferretdbVersion === 'string';
}

/** A value the database refuses to store: PostgreSQL (under FerretDB) refuses U+0000; MongoDB refuses nesting past 100 levels. */
function refusedValue(ferret: boolean, marker: string): unknown {
  if (ferret) return `${marker}\u0000`;
  let nested: unknown = marker;
  for (let i = 0; i < 150; i++) nested = { n: nested };
  return nested;
}

/** Runs `tasks` with at most `width` in flight. */
async function inWaves<T>(count: number, width: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await task(i);
      }
    }),
  );
  return results;
}

describe('the group-commit writer isolates failures', () => {
  let app: TestApp;
  const logs: string[] = [];
  beforeAll(async () => {
    app = await startTestApp({ label: 'isolate', logTo: { write: (line) => void logs.push(line) } });
  });
  afterAll(() => app.close());

  test('tenant A streams events the database refuses while tenant B streams valid ones: B gets 201 every time', async () => {
    const ferret = await isFerretDb(app);
    const a = await app.org({ plan: 'pro' });
    const b = await app.org({ plan: 'pro' });
    const principalA = await principalOf(app, a);
    const marker = 'SECRET-CONTENT-7f3a';
    // A reaches the writer directly: the API's schemas refuse such strings with a 400 before it.
    const aInputs: TCreateEventInput[] = Array.from({ length: 120 }, (_, i) => ({
      actor: { id: `a_${i}`, name: (i % 3 === 0 ? refusedValue(ferret, marker) : `fine ${i}`) as string },
      action: 'doc.written',
      resource: { type: 'doc', id: `d_${i}` },
    }));
    const aDone = Promise.allSettled(aInputs.map((input) => app.services.events.create(principalA, input)));
    const bResults = await inWaves(200, 25, (i) => call(`${app.url}/v1/events`, { key: b.key, body: eventBody({ actor: { id: `b_${i}` } }) }));
    const aResults = await aDone;

    expect(bResults.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.text}`)).toEqual([]);
    await expectGapless(app, b, 200);

    // A: each refused event fails alone, with 422; every other one of A's is stored.
    aResults.forEach((result, i) => {
      if (i % 3 === 0) {
        expect(result.status).toBe('rejected');
        expect((result as PromiseRejectedResult).reason).toMatchObject({ code: 'EVENT_REFUSED', status: 422 });
      } else {
        expect(result.status).toBe('fulfilled');
      }
    });
    const storedA = await app.collections.events.find({ tenant: a.id }).toArray();
    expect(new Set(storedA.map((d) => d.actor_id))).toEqual(new Set(aInputs.filter((_, i) => i % 3 !== 0).map((input) => input.actor.id)));
    await expectGapless(app, a, 80);

    // Logged with the code and index only, never the event.
    expect(logs.some((line) => line.includes('the event store refused an event'))).toBe(true);
    expect(logs.filter((line) => line.includes(marker))).toEqual([]);
  });
});

test('a flood from one organization does not push another organization\'s events back', async () => {
  const app = await startTestApp({ label: 'fairness' });
  try {
    const a = await app.org({ plan: 'pro' });
    const b = await app.org({ plan: 'pro' });
    const [principalA, principalB] = [await principalOf(app, a), await principalOf(app, b)];
    const input = { actor: { id: 'x' }, action: 'doc.written', resource: { type: 'doc', id: 'd' } };
    const roundsBefore = app.services.ingest.stats.batches;
    // 5,000 of A's events queue at once: five full rounds if the queue were first come, first served.
    const flood = Promise.all(Array.from({ length: 5000 }, () => app.services.events.create(principalA, input)));
    let roundOfB = 0;
    const bDone = app.services.events.create(principalB, input).then(() => {
      roundOfB = app.services.ingest.stats.batches - roundsBefore;
    });
    await Promise.all([flood, bDone]);
    // The first round took only the first event; B gets its share of the second.
    expect(roundOfB).toBeGreaterThan(0);
    expect(roundOfB).toBeLessThanOrEqual(2);
    expect(await app.collections.events.countDocuments({ tenant: a.id })).toBe(5000);
  } finally {
    await app.close();
  }
});

describe('exports', () => {
  let app: TestApp;
  let org: TestOrg;
  const logs: string[] = [];
  beforeAll(async () => {
    app = await startTestApp({ label: 'exportlimits', limits: { exportsPerOrg: 1, exportTimeoutMs: 1500 }, logTo: { write: (line) => void logs.push(line) } });
    org = await app.org();
    await seedEvents(app, org, 20_000);
  });
  afterAll(() => app.close());

  /** Starts an export and reads nothing, so it stays open until `stop`. */
  function openExport(key: string): Promise<{ res: IncomingMessage; stop: () => void }> {
    return new Promise((resolve, reject) => {
      const req = httpGet(`${app.url}/v1/events/export`, { headers: { authorization: `Bearer ${key}` } }, (res) => {
        res.pause();
        resolve({ res, stop: () => req.destroy() });
      });
      req.on('error', reject);
    });
  }

  async function openExports(): Promise<number> {
    return (await app.http.metrics.exportStreams.get()).values[0]?.value ?? 0;
  }

  test('a second concurrent export of one organization → 429 with Retry-After; other organizations are not held up', async () => {
    const first = await openExport(org.key);
    try {
      expect(first.res.statusCode).toBe(200);
      const second = await call(`${app.url}/v1/events/export`, { key: org.key });
      expect(second.status).toBe(429);
      expect(second.body).toEqual({ code: 'TOO_MANY_EXPORTS', message: 'At most 1 exports may run at once for an organization; retry when one has finished' });
      expect(second.headers.get('retry-after')).toBe('5');
      const other = await app.org();
      await createEvent(app.url, other.key);
      const theirs = await call(`${app.url}/v1/events/export`, { key: other.key });
      expect(theirs.status).toBe(200);
      expect(theirs.body).toHaveLength(1);
    } finally {
      first.stop();
    }
    // The client went away: the slot is free again.
    await eventually('no open exports', async () => (await openExports()) === 0, 5_000, 25);
    const again = await call(`${app.url}/v1/events/export${query({ actor_id: 'actor_1' })}`, { key: org.key });
    expect(again.status).toBe(200);
    expect(again.body).toHaveLength(200);
  });

  test('an export that runs past its time limit after its first byte is cut, so the body is not a complete array; logged and counted', async () => {
    const failuresBefore = (await app.http.metrics.exportFailures.get()).values[0]?.value ?? 0;
    const { res } = await openExport(org.key);
    expect(res.statusCode).toBe(200);
    // Unread, the export runs past its 1.5 s limit and is cut (counted as it is).
    await eventually('the export cut at its time limit', async () => ((await app.http.metrics.exportFailures.get()).values[0]?.value ?? 0) === failuresBefore + 1, 10_000, 25);
    const received = await new Promise<{ body: string; aborted: boolean }>((resolve) => {
      const chunks: Buffer[] = [];
      let aborted = false;
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('aborted', () => (aborted = true));
      res.on('error', () => (aborted = true));
      res.on('close', () => { resolve({ body: Buffer.concat(chunks).toString(), aborted }); });
      res.resume();
    });
    expect(received.aborted).toBe(true);
    expect(received.body.startsWith('[{"id":')).toBe(true);
    expect(() => JSON.parse(received.body)).toThrow();
    await eventually('the export failure counted', async () => ((await app.http.metrics.exportFailures.get()).values[0]?.value ?? 0) === failuresBefore + 1, 5_000, 25);
    expect(logs.some((line) => line.includes('export failed after its first byte') && line.includes('time limit'))).toBe(true);
    await eventually('no open exports', async () => (await openExports()) === 0, 5_000, 25);
  });
});

describe('limits', () => {
  test('requests per API key: a token bucket, 429 RATE_LIMITED with Retry-After and the RateLimit fields; other keys unaffected', async () => {
    // The limiter's time is the test's (HttpOptions.rateNow): held still, however slow the machine, then moved.
    let now = Date.now();
    const app = await startTestApp({ label: 'ratelimit', limits: { ratePerSecond: 1, rateBurst: 3 }, http: { rateNow: () => now } });
    try {
      const org = await app.org();
      const other = await app.key(org.id);
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await call(`${app.url}/v1/events`, { key: org.key });
        statuses.push(res.status);
        expect(res.headers.get('ratelimit-policy')).toBe('"per-key";q=3;w=3');
        expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"per-key";r=${2 - i};t=\\d+$`));
      }
      expect(statuses).toEqual([200, 200, 200]);
      const limited = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody() });
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({ code: 'RATE_LIMITED', message: 'Too many requests for this API key (at most 1 per second, bursts of 3); retry after 1 s' });
      expect(limited.headers.get('retry-after')).toBe('1');
      expect(limited.headers.get('ratelimit')).toBe('"per-key";r=0;t=1');
      // Nothing was stored for it, and /trpc counts against the same bucket.
      expect(await app.collections.events.countDocuments({ tenant: org.id })).toBe(0);
      const trpc = await call(`${app.url}/trpc/events.list?input=${encodeURIComponent('{}')}`, { key: org.key });
      expect(trpc.status).toBe(429);
      expect(trpc.headers.get('retry-after')).toBe('1');
      // Another key, even of the same organization, has its own bucket.
      expect((await call(`${app.url}/v1/events`, { key: other.key })).status).toBe(200);
      // The bucket refills.
      now += 1000;
      expect((await call(`${app.url}/v1/events`, { key: org.key })).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  describe('on one app with the default limits', () => {
    let app: TestApp;
    let org: TestOrg;
    beforeAll(async () => {
      app = await startTestApp({ label: 'limits', limits: { listPageBytes: 30_000 } });
      org = await app.org();
    });
    afterAll(() => app.close());

    test('a list page ends early rather than pass its byte bound, and the cursor still reads every event once', async () => {
      const mine = await app.org();
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) ids.push((await createEvent(app.url, mine.key, { metadata: { blob: 'x'.repeat(8000) } })).id);
      const first = await call(`${app.url}/v1/events${query({ limit: 1000 })}`, { key: mine.key });
      expect(first.status).toBe(200);
      expect(first.body.data.length).toBeGreaterThan(0);
      expect(first.body.data.length).toBeLessThan(10);
      expect(first.body.has_more).toBe(true);
      expect(Buffer.byteLength(first.text)).toBeLessThan(30_000);
      const seen: string[] = first.body.data.map((e: { id: string }) => e.id);
      let cursor: string | null = first.body.next_cursor;
      while (cursor) {
        const page = await call(`${app.url}/v1/events${query({ limit: 1000, cursor })}`, { key: mine.key });
        seen.push(...page.body.data.map((e: { id: string }) => e.id));
        cursor = page.body.next_cursor;
      }
      expect(seen).toEqual([...ids].reverse());
    });

    test('tRPC batches: more than 10 calls → 400; account procedures refused inside a batch, fine alone', async () => {
      const input = encodeURIComponent(JSON.stringify(Object.fromEntries(Array.from({ length: 11 }, (_, i) => [i, {}]))));
      const eleven = await call(`${app.url}/trpc/${Array(11).fill('events.list').join(',')}?batch=1&input=${input}`, { key: org.key });
      expect(eleven.status).toBe(400);
      expect(JSON.stringify(eleven.body)).toContain('Batch call exceeds maximum size');
      const ten = await call(`${app.url}/trpc/${Array(10).fill('events.list').join(',')}?batch=1&input=${input}`, { key: org.key });
      expect(ten.status).toBe(200);

      const web = new WebSession(app.url);
      const batched = await web.raw('account.me,account.me?batch=1', undefined, { method: 'GET' });
      expect(batched.status).toBe(400);
      expect(batched.body[0].error.message).toBe('Account procedures cannot be called in a batch; send each on its own');
      const email = uniqueEmail('batch');
      const logins = await web.raw('account.signup,account.login?batch=1', { 0: { email, password: 'correct horse battery staple', organization_name: 'B' }, 1: { email, password: 'x' } });
      expect(logins.status).toBe(400);
      expect(await app.collections.accounts.countDocuments({ email })).toBe(0);
      const alone = await web.raw('account.me', undefined, { method: 'GET' });
      expect(alone.status).toBe(200);
    });

    test('a tenant at its monthly cap is answered 429 at the door, without a database round', async () => {
      const capped = await app.org({ monthlyCap: 2 });
      await createEvent(app.url, capped.key);
      await createEvent(app.url, capped.key);
      const first = await call(`${app.url}/v1/events`, { key: capped.key, body: eventBody() });
      expect(first.status).toBe(429);
      // What the requests themselves send: each carries a marker, and only commands sent on its behalf
      // are counted (the ledger's rounds, stream scans and the outbox drain run meanwhile, unmarked).
      const commandsOf = (marker: string) => app.commandsOf(marker).map((c) => `${c.commandName} ${String(c.command[c.commandName])}`);
      for (let i = 0; i < 5; i++) {
        const res = await call(`${app.url}/v1/events`, { key: capped.key, body: eventBody(), headers: { [MARKER_HEADER]: 'at-cap' } });
        expect(res.status).toBe(429);
        expect(res.body).toEqual({ message: 'Monthly event limit reached', code: 'MONTHLY_LIMIT_REACHED' });
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      expect(commandsOf('at-cap')).toEqual([]);
      expect(await app.collections.events.countDocuments({ tenant: capped.id })).toBe(2);
      // The control: an accepted event, marked the same way, is seen writing (so the empty list above is no blind spot).
      const accepted = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody(), headers: { [MARKER_HEADER]: 'accepted' } });
      expect(accepted.status).toBe(201);
      expect(commandsOf('accepted')).toContain('insert events');

      // With an Idempotency-Key: refused at the door too, with no write (the claim is looked up, a read,
      // so that a retry of a request stored before is still answered).
      const stored = await call(`${app.url}/v1/events`, { key: capped.key, body: eventBody(), headers: { 'idempotency-key': 'k-1' } });
      expect(stored.status).toBe(429);
      for (let i = 0; i < 5; i++) {
        const res = await call(`${app.url}/v1/events`, { key: capped.key, body: eventBody({ action: `keyed.${i}` }), headers: { 'idempotency-key': `keyed-${i}`, [MARKER_HEADER]: 'keyed-at-cap' } });
        expect(res.status).toBe(429);
      }
      expect(commandsOf('keyed-at-cap').filter((c) => !c.startsWith('find '))).toEqual([]);
      for (const key of ['k-1', 'keyed-0', 'keyed-4']) expect(await app.collections.idempotencyClaims.findOne({ _id: claimIdOf(capped.id, key) })).toBeNull();
    });

    test('/metrics is not on the public port; its own server serves it', async () => {
      const res = await call(`${app.url}/metrics`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Not found', code: 'NOT_FOUND' });
      const server = createMetricsServer(app.http.metrics).listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      try {
        const { port } = server.address() as AddressInfo;
        const scraped = await fetch(`http://127.0.0.1:${port}/metrics`);
        expect(scraped.status).toBe(200);
        const text = await scraped.text();
        for (const name of ['http_requests_total', 'export_failures_total', 'ingest_events_refused_total']) expect(text).toContain(`# TYPE ${name}`);
        expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
      } finally {
        server.close();
      }
    });
  });
});

describe('sign-in edges', () => {
  test('behind a proxy the client address is the right-most hop, and IPv6 addresses are throttled per /64', async () => {
    const app = await startTestApp({
      label: 'proxyhop',
      http: { trustProxy: true },
      throttle: { windowMs: 60_000, perEmail: 100, perAddress: 3, signupsPerAddress: 100 },
    });
    try {
      const attempt = (forwardedFor: string, i: number) =>
        new WebSession(app.url, { 'x-forwarded-for': forwardedFor }).raw('account.login', { email: `nobody${i}@example.com`, password: 'wrong password!' });
      // The client writes whatever it likes to the left of the proxy's entry: it does not change the address.
      const spoofed = [];
      for (let i = 0; i < 4; i++) spoofed.push((await attempt(`10.0.0.${i}, 203.0.113.9`, i)).status);
      expect(spoofed).toEqual([401, 401, 401, 429]);
      // Four addresses in one /64 are one client.
      const v6 = [];
      for (let i = 0; i < 4; i++) v6.push((await attempt(`2001:db8:aa:bb::${i + 1}`, 10 + i)).status);
      expect(v6).toEqual([401, 401, 401, 429]);
      // Another /64 is another client.
      expect((await attempt('2001:db8:aa:cc::1', 20)).status).toBe(401);
    } finally {
      await app.close();
    }
  });

  test('a cross-site POST is let through only with an API key and no session cookie', async () => {
    const app = await startTestApp({ label: 'crosssite' });
    try {
      const org = await app.org();
      const evil = { origin: 'https://evil.example' };
      const login = { email: 'victim@example.com', password: 'whatever password' };
      const web = new WebSession(app.url, evil);
      // A session cookie next to the key: refused, whatever the key.
      const withCookie = await web.raw('account.login', login, { headers: { authorization: `Bearer ${org.key}`, cookie: 'al_session=als_x' } });
      expect(withCookie.status).toBe(403);
      const withHostCookie = await web.raw('account.login', login, { headers: { authorization: `Bearer ${org.key}`, cookie: '__Host-al_session=als_x' } });
      expect(withHostCookie.status).toBe(403);
      // Any other Authorization header is no exemption.
      for (const authorization of ['Basic dXNlcjpwYXNz', 'Bearer not-a-key', 'x']) {
        expect((await web.raw('account.login', login, { headers: { authorization } })).status).toBe(403);
      }
      // A script with a key and no cookie is not a browser: it reaches the procedure (which wants a session).
      const script = await web.raw('events.create', eventBody(), { headers: { authorization: `Bearer ${org.key}` } });
      expect(script.status).toBe(200);
    } finally {
      await app.close();
    }
  });
});

test('/trpc: TRACE is refused with 405, not a 500, and every answer carries its own status\'s reason phrase', async () => {
  const app = await startTestApp({ label: 'trpcmethods' });
  try {
    const org = await app.org();
    // fetch refuses to send TRACE itself (a forbidden method), so does tRPC's handler when it builds one: raw HTTP.
    const raw = (method: string, path: string) => rawHttp(app.url, { method, path, headers: { authorization: `Bearer ${org.key}` } });
    const trace = await raw('TRACE', '/trpc/events.list');
    expect({ status: trace.status, reason: trace.reason, allow: trace.headers.allow }).toEqual({ status: 405, reason: 'Method Not Allowed', allow: 'GET, POST' });
    expect(JSON.parse(trace.body)).toEqual({ message: 'TRACE is not supported on /trpc', code: 'METHOD_NOT_ALLOWED' });
    // tRPC sets the status itself: the reason phrase was Koa's "OK" of the 200 it starts from.
    const malformed = await raw('GET', '/trpc/events.list?input=not-json');
    expect(malformed.status).toBe(400);
    expect(malformed.reason).toBe('Bad Request');
    const listed = await raw('GET', `/trpc/events.list?input=${encodeURIComponent('{}')}`);
    expect({ status: listed.status, reason: listed.reason }).toEqual({ status: 200, reason: 'OK' });
  } finally {
    await app.close();
  }
});

test('/v1 answers an event POSTed with an absolute-form request-target as it answers the origin-form one (koa-mount\'s way, not the straight path\'s slice)', async () => {
  const app = await startTestApp({ label: 'absoluteform' });
  try {
    const org = await app.org();
    // fetch always sends origin-form: raw HTTP, with the request-target a proxy would send (RFC 9112 §3.2.2).
    const post = (target: string) =>
      rawHttp(app.url, { method: 'POST', path: target, headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' }, body: JSON.stringify(eventBody({ action: 'absolute.form' })) });
    const absolute = await post(`${app.url}/v1/events`);
    expect(absolute.status).toBe(201);
    const stored = (JSON.parse(absolute.body) as { event: { id: string; action: string } }).event;
    expect((await call(`${app.url}/v1/events/${stored.id}`, { key: org.key })).body).toMatchObject({ id: stored.id, action: 'absolute.form' });
    expect((await post('/v1/events')).status).toBe(201);
    // Neither form reaches a procedure that is not there: the same 404.
    const missing = [await post(`${app.url}/v1/nothing`), await post('/v1/nothing')];
    expect(missing.map((r) => r.status)).toEqual([404, 404]);
    expect(missing[0]?.body).toBe(missing[1]?.body);
  } finally {
    await app.close();
  }
});

test('HEAD on a /v1 resource answers as its GET does, without the body', async () => {
  const app = await startTestApp({ label: 'headrequests' });
  try {
    const org = await app.org();
    const created = await createEvent(app.url, org.key);
    const head = (path: string) => rawHttp(app.url, { method: 'HEAD', path, headers: { authorization: `Bearer ${org.key}` } });
    for (const path of ['/v1/events', `/v1/events/${String(created.id)}`]) {
      const [got, headed] = [await call(`${app.url}${path}`, { key: org.key }), await head(path)];
      expect({ path, status: headed.status, type: headed.headers['content-type'], body: headed.body }).toEqual({ path, status: got.status, type: got.headers.get('content-type'), body: '' });
      expect(got.status).toBe(200);
    }
    // A missing event is the GET's 404; a path with no GET, the same 404 as its GET.
    expect((await head('/v1/events/00000000-0000-7000-8000-000000000000')).status).toBe(404);
    expect((await head('/v1/nothing')).status).toBe((await call(`${app.url}/v1/nothing`, { key: org.key })).status);
    // Without a key: the GET's 401.
    expect((await rawHttp(app.url, { method: 'HEAD', path: '/v1/events' })).status).toBe(401);
  } finally {
    await app.close();
  }
});
