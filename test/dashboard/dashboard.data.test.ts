/**
 * The dashboard's data procedures over real HTTP: API keys (create, list, revoke taking effect at once),
 * the events explorer, the usage meter, the session export, isolation between accounts, and how the
 * built dashboard is served.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parse } from 'csv-parse/sync';
import { curlExample } from '../../src/dashboard/lib/curlExample';
import { DEFAULT_THROTTLE } from '../../src/services/authThrottle';
import { call, createEvent, eventBody, query, sentEvents, SPEC_CSV_COLUMNS } from '../helpers/api';
import { startTestApp, type TestApp } from '../helpers/harness';
import { failure, uniqueEmail, WebSession } from '../helpers/webSession';

let app: TestApp;

beforeAll(async () => {
  // Every test signs up from 127.0.0.1; the sign-up limit per address is tested in dashboard.account.
  app = await startTestApp({ label: 'dashdata', throttle: { ...DEFAULT_THROTTLE, signupsPerAddress: 1_000 } });
});
afterAll(async () => {
  await app.close();
});

async function signedIn(target: TestApp = app): Promise<WebSession> {
  const web = new WebSession(target.url);
  await web.signup(uniqueEmail('data'));
  return web;
}

describe('API keys', () => {
  it('creates a key shown once, lists it by prefix and last four characters, and the key works on /v1', async () => {
    const web = await signedIn();
    const created = await web.client.dashboard.keys.create.mutate({ name: '  billing-service  ' });
    expect(created.key).toMatch(/^alk_[A-Za-z0-9_-]{43}$/);
    expect(created.apiKey).toMatchObject({ name: 'billing-service', status: 'active', last_used_at: null, prefix: created.key.slice(0, 8), last4: created.key.slice(-4) });

    const listed = await web.client.dashboard.keys.list.query();
    expect(listed).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain(created.key);
    expect(JSON.stringify(listed)).not.toContain(created.key.slice(8, -4));

    const event = await createEvent(app.url, created.key);
    const me = await web.client.account.me.query();
    expect(event.organization_id).toBe(me?.organization.id);
    expect(event.api_key_id).toBe(created.apiKey.id);
    const [used] = await web.client.dashboard.keys.list.query();
    expect(used?.last_used_at).not.toBeNull();
  });

  it('refuses an empty or overlong name', async () => {
    const web = await signedIn();
    expect(await failure(web.client.dashboard.keys.create.mutate({ name: '   ' }))).toEqual({ status: 400, code: 'VALIDATION_FAILED', message: 'Invalid request: name must not be empty' });
    expect(await failure(web.client.dashboard.keys.create.mutate({ name: 'x'.repeat(101) }))).toEqual({ status: 400, code: 'VALIDATION_FAILED', message: 'Invalid request: name must be at most 100 characters' });
  });

  it('revoking takes effect at once: the very next write and read with the key get 401 Invalid API key', async () => {
    const web = await signedIn();
    const { key, apiKey } = await web.client.dashboard.keys.create.mutate({ name: 'soon revoked' });
    // Warm every cache the key could sit in: a write (the write shortcut) and a read.
    await createEvent(app.url, key);
    expect((await call(`${app.url}/v1/events`, { key })).status).toBe(200);

    const revoked = await web.client.dashboard.keys.revoke.mutate({ id: apiKey.id });
    expect(revoked.status).toBe('revoked');
    expect(revoked.revoked_at).not.toBeNull();

    const write = await call(`${app.url}/v1/events`, { key, body: eventBody() });
    expect(write.status).toBe(401);
    expect(write.body.message).toBe('Invalid API key');
    const read = await call(`${app.url}/v1/events`, { key });
    expect(read.status).toBe(401);
    const exported = await call(`${app.url}/v1/events/export`, { key });
    expect(exported.status).toBe(401);
    const listed = await web.client.dashboard.events.list.query({});
    expect(sentEvents(listed.data)).toHaveLength(1);
    // The key's creation and revocation are on the organization's own record.
    expect(listed.data.map((e) => e.action)).toEqual(['audit_ledger.key.revoked', 'user.role_changed', 'audit_ledger.key.created']);
  });

  it('one account can neither see nor revoke another account’s keys', async () => {
    const alice = await signedIn();
    const mallory = await signedIn();
    const { key, apiKey } = await alice.client.dashboard.keys.create.mutate({ name: 'alice key' });
    expect(await mallory.client.dashboard.keys.list.query()).toEqual([]);
    expect(await failure(mallory.client.dashboard.keys.revoke.mutate({ id: apiKey.id }))).toEqual({ status: 404, code: 'API_KEY_NOT_FOUND', message: 'API key not found' });
    expect((await call(`${app.url}/v1/events`, { key })).status).toBe(200);
    expect((await alice.client.dashboard.keys.list.query())[0]?.status).toBe('active');
  });
});

describe('events explorer', () => {
  it('lists newest first with the cursor and filters by actor, action, resource and date range', async () => {
    const web = await signedIn();
    const { key } = await web.client.dashboard.keys.create.mutate({ name: 'ingest' });
    const day = (d: number) => new Date(Date.UTC(2026, 10, d, 12)).toISOString();
    await createEvent(app.url, key, { timestamp: day(1), actor: { id: 'alice' }, action: 'invoice.created', resource: { type: 'invoice', id: 'inv_1' } });
    await createEvent(app.url, key, { timestamp: day(3), actor: { id: 'bob' }, action: 'user.role_changed', resource: { type: 'user', id: 'u_1' } });
    await createEvent(app.url, key, { timestamp: day(5), actor: { id: 'alice' }, action: 'user.role_changed', resource: { type: 'user', id: 'u_2' } });

    // The key's creation (now) is the newest event; the three sent are backdated.
    const newest = await web.client.dashboard.events.list.query({ limit: 1 });
    expect(newest.data.map((e) => e.action)).toEqual(['audit_ledger.key.created']);
    const all = await web.client.dashboard.events.list.query({ limit: 2, cursor: newest.next_cursor ?? '' });
    expect(all.data.map((e) => e.timestamp)).toEqual([day(5), day(3)]);
    expect(all.has_more).toBe(true);
    const rest = await web.client.dashboard.events.list.query({ limit: 2, cursor: all.next_cursor ?? '' });
    expect(rest.data.map((e) => e.timestamp)).toEqual([day(1)]);

    const byActor = await web.client.dashboard.events.list.query({ actor_id: 'alice' });
    expect(byActor.data.map((e) => e.resource_id)).toEqual(['u_2', 'inv_1']);
    const byRange = await web.client.dashboard.events.list.query({ start_date: day(2), end_date: day(4) });
    expect(byRange.data.map((e) => e.actor_id)).toEqual(['bob']);
    const byResource = await web.client.dashboard.events.list.query({ resource_type: 'user', resource_id: 'u_1' });
    expect(byResource.data).toHaveLength(1);
    const byAction = await web.client.dashboard.events.list.query({ action: 'user.role_changed', actor_id: 'alice' });
    expect(byAction.data.map((e) => e.resource_id)).toEqual(['u_2']);

    const one = await web.client.dashboard.events.get.query({ id: byRange.data[0]?.id ?? '' });
    expect(one.metadata).toEqual({ field: 'role', old_value: 'member', new_value: 'admin' });
  });

  it('shows an account only its own organization’s events, in lists, single reads and exports', async () => {
    const alice = await signedIn();
    const bob = await signedIn();
    const { key } = await alice.client.dashboard.keys.create.mutate({ name: 'k' });
    const secret = await createEvent(app.url, key, { actor: { id: 'alice-only' } });
    // Bob even names Alice's organization in the filter: the tenant comes from his session, not the filter.
    const aliceOrg = (await alice.client.account.me.query())?.organization.id ?? '';
    expect((await bob.client.dashboard.events.list.query({})).data).toEqual([]);
    expect((await bob.client.dashboard.events.list.query({ organization_id: aliceOrg })).data).toEqual([]);
    expect(await failure(bob.client.dashboard.events.get.query({ id: secret.id }))).toMatchObject({ status: 404, message: 'Event not found' });
    const exported = await call(`${app.url}/session/events/export?format=json`, { headers: { cookie: bob.cookie ?? '' } });
    expect(exported.status).toBe(200);
    expect(exported.body).toEqual([]);
    expect((await bob.client.dashboard.usage.query()).used).toBe(0);
  });

  it('answers 401 Not signed in to every dashboard procedure without a session', async () => {
    const anonymous = new WebSession(app.url);
    expect(await anonymous.client.account.me.query()).toBeNull();
    for (const attempt of [
      anonymous.client.dashboard.events.list.query({}),
      anonymous.client.dashboard.keys.list.query(),
      anonymous.client.dashboard.usage.query(),
      anonymous.client.account.logout.mutate(),
    ]) {
      expect(await failure(attempt)).toEqual({ status: 401, code: 'NOT_SIGNED_IN', message: 'Not signed in' });
    }
    const exported = await call(`${app.url}/session/events/export?format=csv`);
    expect(exported.status).toBe(401);
    expect(exported.body).toEqual({ message: 'Not signed in', code: 'NOT_SIGNED_IN' });
  });
});

describe('export from the dashboard', () => {
  it('streams exactly the filtered events as a CSV download with the spec’s columns', async () => {
    const web = await signedIn();
    const { key } = await web.client.dashboard.keys.create.mutate({ name: 'k' });
    await createEvent(app.url, key, { actor: { id: 'carol' }, metadata: { note: 'a, "quoted"\nline' } });
    await createEvent(app.url, key, { actor: { id: 'dave' } });
    const res = await call(`${app.url}/session/events/export${query({ format: 'csv', actor_id: 'carol' })}`, { headers: { cookie: web.cookie ?? '' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename=".+\.csv"$/);
    const rows: string[][] = parse(res.text);
    expect(rows[0]).toEqual(SPEC_CSV_COLUMNS);
    expect(rows).toHaveLength(2);
    expect(rows[1]?.[SPEC_CSV_COLUMNS.indexOf('actor_id')]).toBe('carol');
  });

  it('refuses bad filters with 400, like /v1', async () => {
    const web = await signedIn();
    const res = await call(`${app.url}/session/events/export?format=xml`, { headers: { cookie: web.cookie ?? '' } });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { code: 'VALIDATION_FAILED', message: 'Invalid request: format must be json or csv', fields: ['format'] } });
  });
});

describe('usage', () => {
  it('counts this month exactly, warns at 80% and says when the cap is reached; the chart has 30 UTC days', async () => {
    const web = await signedIn();
    const me = await web.client.account.me.query();
    const orgId = me?.organization.id ?? '';
    // The cap is an operator's setting; lower it so the states can be reached quickly.
    await app.collections.orgs.updateOne({ _id: orgId }, { $set: { monthly_cap: 5 } });
    const { key } = await web.client.dashboard.keys.create.mutate({ name: 'k' });

    let usage = await web.client.dashboard.usage.query();
    expect(usage).toMatchObject({ used: 0, cap: 5, state: 'ok' });
    expect(usage.daily).toHaveLength(30);
    expect(usage.daily.at(-1)?.date).toBe(new Date().toISOString().slice(0, 10));

    for (let i = 0; i < 4; i += 1) await createEvent(app.url, key, { timestamp: '2020-01-01T00:00:00.000Z' });
    usage = await web.client.dashboard.usage.query();
    // Backdated events still count for the month they were received in.
    expect(usage).toMatchObject({ used: 4, cap: 5, state: 'warning' });
    // The chart counts every event received, the key's creation record among them (it counts against no cap).
    expect(usage.daily.at(-1)?.count).toBe(5);
    expect(usage.daily).toHaveLength(30);
    expect(usage.daily.slice(0, -1).filter((d) => d.count !== 0)).toEqual([]);

    await createEvent(app.url, key);
    expect((await call(`${app.url}/v1/events`, { key, body: eventBody() })).status).toBe(429);
    usage = await web.client.dashboard.usage.query();
    expect(usage).toMatchObject({ used: 5, cap: 5, state: 'exhausted' });
  });

  it('starts each month at zero and counts each day by time of receipt', async () => {
    let now = Date.parse('2026-03-30T10:00:00.000Z');
    const clocked = await startTestApp({ label: 'usage_clock', clock: { now: () => new Date(now) } });
    try {
      const web = await signedIn(clocked);
      const { key } = await web.client.dashboard.keys.create.mutate({ name: 'k' });
      await createEvent(clocked.url, key);
      now = Date.parse('2026-03-31T08:00:00.000Z');
      await web.client.account.me.query(); // keeps the session from idling out
      now = Date.parse('2026-03-31T23:59:59.999Z');
      await createEvent(clocked.url, key);
      await createEvent(clocked.url, key);
      now = Date.parse('2026-04-01T00:00:00.000Z');
      await createEvent(clocked.url, key);
      const usage = await web.client.dashboard.usage.query();
      expect(usage.month).toBe('2026-04');
      expect(usage.used).toBe(1);
      expect(usage.daily.slice(-3)).toEqual([
        // The key's creation record (counted by the chart, not against the cap) and one event.
        { date: '2026-03-30', count: 2 },
        { date: '2026-03-31', count: 2 },
        { date: '2026-04-01', count: 1 },
      ]);
    } finally {
      await clocked.close();
    }
  });
});

describe('getting started', () => {
  it('the curl example works as pasted into a shell, with the key in AUDIT_LEDGER_API_KEY', async () => {
    const web = await signedIn();
    const { key } = await web.client.dashboard.keys.create.mutate({ name: 'from the docs' });
    const { stdout } = await promisify(execFile)('bash', ['-c', `${curlExample(app.url)} --silent --show-error --write-out '\\n%{http_code}'`], {
      env: { ...process.env, AUDIT_LEDGER_API_KEY: key },
    });
    const [body = '', status] = stdout.trim().split('\n');
    expect(status).toBe('201');
    expect(JSON.parse(body).event).toMatchObject({ action: 'user.role_changed', metadata: { field: 'role', old_value: 'viewer', new_value: 'admin' } });
    expect(sentEvents((await web.client.dashboard.events.list.query({})).data)).toHaveLength(1);
  });
});

describe('serving the dashboard', () => {
  it('serves index.html for client-side routes (revalidated, with a CSP) and hashed assets cached for a year', async () => {
    const page = await call(`${app.url}/events?actor_id=alice`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const asset = /\/assets\/[\w-]+\.js/.exec(page.text)?.[0];
    expect(asset).toBeDefined();
    const js = await fetch(`${app.url}${asset}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const missing = await call(`${app.url}/assets/nope-123.js`);
    expect(missing.status).toBe(404);
  });

  it('leaves the API’s own 404s as JSON', async () => {
    const res = await call(`${app.url}/v1/nothing-here`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/json/);
  });

  it('marks the session cookie Secure, with the __Host- prefix, when the dashboard is served over HTTPS', async () => {
    const https = await startTestApp({ label: 'https', http: { publicUrl: 'https://audit.example.com' } });
    try {
      const web = new WebSession(https.url);
      const email = uniqueEmail('secure');
      await web.signup(email);
      const cookie = web.setCookies.at(-1) ?? '';
      expect(cookie).toMatch(/^__Host-al_session=als_/);
      expect(cookie).toMatch(/; Secure/);
      expect(cookie).toMatch(/; Path=\//);
      expect(cookie).not.toMatch(/Domain=/i);
      // Read back under the same name: the session works.
      expect((await web.client.account.me.query())?.account.email).toBe(email);
      // The plain name means nothing on an HTTPS deployment.
      const plain = await web.raw('account.me', undefined, { method: 'GET', headers: { cookie: (web.cookie ?? '').replace('__Host-', '') } });
      expect(plain.body.result.data).toBeNull();
    } finally {
      await https.close();
    }
  });
});
