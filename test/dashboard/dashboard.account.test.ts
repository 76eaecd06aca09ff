/**
 * Dashboard accounts over real HTTP: sign-up, sign-in, sign-out, the session cookie, throttling,
 * cross-site refusal, and the rule that sessions and API keys never stand in for each other.
 */
import { DEFAULT_THROTTLE } from '../../src/services/authThrottle';
import { ARGON2_PARAMS } from '../../src/services/passwords';
import { call, createEvent } from '../helpers/api';
import { startTestApp, type TestApp } from '../helpers/harness';
import { failure, uniqueEmail, WebSession } from '../helpers/webSession';

let app: TestApp;

beforeAll(async () => {
  // Most tests here sign up from 127.0.0.1; the sign-up limit per address has its own test below.
  app = await startTestApp({ label: 'account', throttle: { ...DEFAULT_THROTTLE, signupsPerAddress: 1_000 } });
});
afterAll(async () => {
  await app.close();
});

describe('sign-up', () => {
  it('creates the account and a free-plan organization, and signs in with an HttpOnly SameSite=Lax cookie', async () => {
    const web = new WebSession(app.url);
    const email = uniqueEmail('signup');
    const view = await web.signup(email.toUpperCase(), 'correct horse battery staple', 'Globex');
    expect(view.account.email).toBe(email);
    expect(view.organization).toMatchObject({ name: 'Globex', plan: 'free', monthly_cap: 10_000 });

    const cookie = web.setCookies.at(-1) ?? '';
    expect(cookie).toMatch(/^al_session=als_[A-Za-z0-9_-]{43};/);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Lax/);
    expect(cookie).toMatch(/; Path=\//);
    // Served over plain HTTP here: a Secure cookie would never come back.
    expect(cookie).not.toMatch(/Secure/);

    const me = await web.client.account.me.query();
    expect(me?.organization.id).toBe(view.organization.id);
  });

  it('stores the password as Argon2id with at least OWASP parameters, never the password itself', async () => {
    const web = new WebSession(app.url);
    const email = uniqueEmail('hash');
    await web.signup(email, 'a long enough password');
    const doc = await app.collections.accounts.findOne({ email });
    expect(doc?.password_hash).toMatch(/^\$argon2id\$v=19\$m=\d+,p=\d+,t=\d+\$/);
    const [, m, , t] = /m=(\d+),p=(\d+),t=(\d+)/.exec(doc?.password_hash ?? '') ?? [];
    expect(Number(m)).toBeGreaterThanOrEqual(19_456);
    expect(Number(t)).toBeGreaterThanOrEqual(2);
    expect(Number(m)).toBe(ARGON2_PARAMS.memoryCost);
    expect(JSON.stringify(doc)).not.toContain('a long enough password');
  });

  it('refuses a taken email (in any case), a short password and a bad email with 4xx and a clear message', async () => {
    const web = new WebSession(app.url);
    const email = uniqueEmail('taken');
    await web.signup(email);
    expect(await failure(new WebSession(app.url).signup(email.toUpperCase()))).toEqual({
      status: 409,
      code: 'EMAIL_TAKEN',
      message: 'An account with this email already exists. Log in instead.',
    });
    expect(await failure(new WebSession(app.url).signup(uniqueEmail(), 'short'))).toEqual({ status: 400, code: 'VALIDATION_FAILED', message: 'Invalid request: password must be at least 12 characters' });
    expect(await failure(new WebSession(app.url).signup('not-an-email'))).toEqual({ status: 400, code: 'VALIDATION_FAILED', message: 'Invalid request: email must be a valid email address' });
    expect(await app.collections.accounts.countDocuments({ email })).toBe(1);
  });

  it('gives exactly one account when the same email signs up twice at once', async () => {
    const email = uniqueEmail('race');
    const results = await Promise.allSettled([new WebSession(app.url).signup(email), new WebSession(app.url).signup(email)]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(await app.collections.accounts.countDocuments({ email })).toBe(1);
  });
});

describe('sign-in and sign-out', () => {
  it('answers the same generic 401 for a wrong password and for an email that does not exist', async () => {
    const email = uniqueEmail('generic');
    await new WebSession(app.url).signup(email);
    const wrongPassword = await new WebSession(app.url).raw('account.login', { email, password: 'not the password' });
    const noSuchEmail = await new WebSession(app.url).raw('account.login', { email: uniqueEmail('ghost'), password: 'not the password' });
    expect(wrongPassword.status).toBe(401);
    expect(noSuchEmail.status).toBe(401);
    expect(wrongPassword.body.error.message).toBe('Invalid email or password');
    expect(noSuchEmail.body.error).toEqual({ ...wrongPassword.body.error });
  });

  it('rotates the session at sign-in: a new token each time, and the one the browser held stops working', async () => {
    const email = uniqueEmail('rotate');
    const web = new WebSession(app.url);
    await web.signup(email);
    const before = web.cookie;
    await web.login(email);
    const after = web.cookie;
    expect(after).toBeDefined();
    expect(after).not.toBe(before);

    const stale = await new WebSession(app.url, { cookie: before ?? '' }).raw('dashboard.keys.list', undefined, { method: 'GET' });
    expect(stale.status).toBe(401);
    expect(stale.body.error.message).toBe('Not signed in');
    expect(await web.client.dashboard.keys.list.query()).toEqual([]);
  });

  it('logs out for real: the cookie is cleared and the old token is refused by the server', async () => {
    const web = new WebSession(app.url);
    await web.signup(uniqueEmail('logout'));
    const token = web.cookie ?? '';
    await web.client.account.logout.mutate();
    expect(web.setCookies.at(-1)).toMatch(/^al_session=;.*Expires=Thu, 01 Jan 1970/);
    expect(await web.client.account.me.query()).toBeNull();
    // A copy of the cookie kept elsewhere (another tab, a thief) is dead too.
    const replay = await new WebSession(app.url, { cookie: token }).raw('dashboard.usage', undefined, { method: 'GET' });
    expect(replay.status).toBe(401);
  });

  it('refuses forged, malformed and absent session tokens alike', async () => {
    for (const cookie of ['al_session=als_' + 'A'.repeat(43), 'al_session=garbage', 'al_session=', '']) {
      const res = await new WebSession(app.url, { cookie }).raw('dashboard.keys.list', undefined, { method: 'GET' });
      expect({ cookie, status: res.status }).toEqual({ cookie, status: 401 });
    }
  });

  it('ends a session after its idle timeout and its absolute lifetime', async () => {
    let now = Date.now();
    const clocked = await startTestApp({ label: 'session_clock', clock: { now: () => new Date(now) } });
    try {
      const web = new WebSession(clocked.url);
      const email = uniqueEmail('idle');
      await web.signup(email);
      now += 23 * 3_600_000;
      expect(await web.client.account.me.query()).not.toBeNull();
      now += 23 * 3_600_000; // 23 h since the last request: still signed in
      expect(await web.client.account.me.query()).not.toBeNull();
      now += 24 * 3_600_000 + 1; // a day without a request
      expect(await web.client.account.me.query()).toBeNull();

      await web.login(email);
      const signedInAt = now;
      while (now - signedInAt < 7 * 24 * 3_600_000 - 20 * 3_600_000) {
        now += 20 * 3_600_000;
        expect(await web.client.account.me.query()).not.toBeNull();
      }
      now = signedInAt + 7 * 24 * 3_600_000;
      // Active all along, but seven days since sign-in.
      expect(await web.client.account.me.query()).toBeNull();
    } finally {
      await clocked.close();
    }
  });
});

describe('throttling', () => {
  it('locks an account after 5 failed sign-ins in 15 minutes, whatever the address, even for the right password', async () => {
    const throttled = await startTestApp({ label: 'throttle_acct', http: { trustProxy: true } });
    try {
      const email = uniqueEmail('locked');
      await new WebSession(throttled.url).signup(email, 'the right password!');
      for (let i = 0; i < 5; i += 1) {
        const web = new WebSession(throttled.url, { 'x-forwarded-for': `10.1.0.${i}` });
        expect(await failure(web.login(email, 'a wrong password'))).toMatchObject({ status: 401 });
      }
      const sixth = await new WebSession(throttled.url, { 'x-forwarded-for': '10.1.0.99' }).raw('account.login', { email, password: 'the right password!' });
      expect(sixth.status).toBe(429);
      expect(sixth.body.error.message).toBe('Too many sign-in attempts. Wait a few minutes and try again.');
      // The same answer for an email that does not exist, once it has been tried as often: no hint either way.
      const ghost = uniqueEmail('ghost');
      for (let i = 0; i < 5; i += 1) await failure(new WebSession(throttled.url, { 'x-forwarded-for': `10.2.0.${i}` }).login(ghost, 'x'.repeat(12)));
      const ghostSixth = await new WebSession(throttled.url, { 'x-forwarded-for': '10.2.0.99' }).raw('account.login', { email: ghost, password: 'x'.repeat(12) });
      expect(ghostSixth.status).toBe(429);
      expect(ghostSixth.body.error).toEqual(sixth.body.error);
    } finally {
      await throttled.close();
    }
  });

  it('limits one client address trying many accounts, without locking those accounts out for other addresses', async () => {
    const throttled = await startTestApp({
      label: 'throttle_ip',
      http: { trustProxy: true },
      throttle: { windowMs: 15 * 60_000, perEmail: 5, perAddress: 8, signupsPerAddress: 10 },
    });
    try {
      const victim = uniqueEmail('victim');
      await new WebSession(throttled.url, { 'x-forwarded-for': '10.9.9.9' }).signup(victim, 'the right password!');
      const attacker = (n: number) => new WebSession(throttled.url, { 'x-forwarded-for': '203.0.113.7' }).login(uniqueEmail(`spray${n}`), 'Winter2026!!');
      for (let i = 0; i < 8; i += 1) expect(await failure(attacker(i))).toMatchObject({ status: 401 });
      expect(await failure(attacker(8))).toMatchObject({ status: 429, code: 'TOO_MANY_ATTEMPTS' });
      // Like every 429, it says when to come back: after the whole window (refused attempts count too).
      const refused = await new WebSession(throttled.url, { 'x-forwarded-for': '203.0.113.7' }).raw('account.login', { email: uniqueEmail('spray9'), password: 'Winter2026!!' });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('900');
      // The attacker's address is blocked even for a correct password…
      expect(await failure(new WebSession(throttled.url, { 'x-forwarded-for': '203.0.113.7' }).login(victim, 'the right password!'))).toMatchObject({ status: 429 });
      // …and the victim, elsewhere, still signs in.
      const ok = await new WebSession(throttled.url, { 'x-forwarded-for': '198.51.100.1' }).login(victim, 'the right password!');
      expect(ok.account.email).toBe(victim);
    } finally {
      await throttled.close();
    }
  });

  it('counts parallel attempts exactly: a burst of 12 wrong passwords gets at most 5 verdicts of 401', async () => {
    const throttled = await startTestApp({ label: 'throttle_burst' });
    try {
      const email = uniqueEmail('burst');
      await new WebSession(throttled.url).signup(email);
      const results = await Promise.all(Array.from({ length: 12 }, () => failure(new WebSession(throttled.url).login(email, 'wrong password!!'))));
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(7);
    } finally {
      await throttled.close();
    }
  });

  it('limits sign-ups per client address (10 per 15 minutes by default)', async () => {
    const throttled = await startTestApp({ label: 'throttle_signup' });
    try {
      for (let i = 0; i < DEFAULT_THROTTLE.signupsPerAddress; i += 1) await new WebSession(throttled.url).signup(uniqueEmail('many'));
      expect(await failure(new WebSession(throttled.url).signup(uniqueEmail('many')))).toEqual({
        status: 429,
        code: 'TOO_MANY_ATTEMPTS',
        message: 'Too many sign-ups from this address. Wait a while and try again.',
      });
      const refused = await new WebSession(throttled.url).raw('account.signup', { email: uniqueEmail('many'), password: 'correct horse battery staple', organization_name: 'Acme Inc' });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe(String(DEFAULT_THROTTLE.windowMs / 1000));
    } finally {
      await throttled.close();
    }
  });
});

describe('cross-site requests', () => {
  it('refuses POSTs from another origin with 403, signed in or not, and changes nothing', async () => {
    const web = new WebSession(app.url);
    await web.signup(uniqueEmail('csrf'));
    const forged = await web.raw('dashboard.keys.create', { name: 'forged' }, { headers: { origin: 'https://evil.example' } });
    expect(forged.status).toBe(403);
    expect(forged.body).toEqual({ message: 'Cross-site request refused', code: 'CROSS_SITE_REQUEST' });
    const forgedLogout = await web.raw('account.logout', undefined, { headers: { origin: 'null' } });
    expect(forgedLogout.status).toBe(403);
    // Browsers that send no Origin still send Sec-Fetch-Site.
    const noOrigin = await web.raw('dashboard.keys.create', { name: 'forged' }, { headers: { origin: '', 'sec-fetch-site': 'cross-site' } });
    expect(noOrigin.status).toBe(403);
    // Login CSRF: signing a victim's browser into the attacker's account.
    const loginCsrf = await new WebSession(app.url).raw('account.login', { email: 'a@b.co', password: 'whatever' }, { headers: { origin: 'https://evil.example' } });
    expect(loginCsrf.status).toBe(403);

    expect(await web.client.dashboard.keys.list.query()).toEqual([]);
    expect(await web.client.account.me.query()).not.toBeNull();
  });

  it('accepts same-origin POSTs', async () => {
    const web = new WebSession(app.url);
    await web.signup(uniqueEmail('same'));
    const res = await web.raw('dashboard.keys.create', { name: 'ok' }, { headers: { origin: app.url, 'sec-fetch-site': 'same-origin' } });
    expect(res.status).toBe(200);
  });
});

describe('sessions and API keys are separate ways in', () => {
  it('a session cookie does not work as an API key, on /v1 or on /trpc', async () => {
    const web = new WebSession(app.url);
    await web.signup(uniqueEmail('sep'));
    const cookie = web.cookie ?? '';
    const rest = await call(`${app.url}/v1/events`, { headers: { cookie } });
    expect(rest.status).toBe(401);
    expect(rest.body.message).toBe('Missing or invalid API key');
    const create = await call(`${app.url}/v1/events`, { headers: { cookie }, body: { actor: { id: 'a' }, action: 'x.y', resource: { type: 't', id: '1' } } });
    expect(create.status).toBe(401);
    const trpcCreate = await web.raw('events.create', { actor: { id: 'a' }, action: 'x.y', resource: { type: 't', id: '1' } });
    expect(trpcCreate.status).toBe(401);
    const exported = await call(`${app.url}/v1/events/export`, { headers: { cookie } });
    expect(exported.status).toBe(401);
    // The token itself as a Bearer key: not a key.
    const asBearer = await call(`${app.url}/v1/events`, { key: cookie.replace('al_session=', '') });
    expect(asBearer.status).toBe(401);
  });

  it('an API key does not work as a session', async () => {
    const org = await app.org();
    await createEvent(app.url, org.key);
    const web = new WebSession(app.url, { authorization: `Bearer ${org.key}` });
    expect(await failure(web.client.dashboard.events.list.query({}))).toMatchObject({ status: 401, code: 'NOT_SIGNED_IN' });
    expect(await failure(web.client.dashboard.keys.create.mutate({ name: 'x' }))).toMatchObject({ status: 401, code: 'NOT_SIGNED_IN' });
    const asCookie = await new WebSession(app.url, { cookie: `al_session=${org.key}` }).raw('dashboard.keys.list', undefined, { method: 'GET' });
    expect(asCookie.status).toBe(401);
    const exported = await call(`${app.url}/session/events/export?format=csv`, { key: org.key });
    expect(exported.status).toBe(401);
  });

  it('sign-in procedures are not part of the REST surface', async () => {
    const res = await call(`${app.url}/v1/account/login`, { body: { email: 'a@b.co', password: 'x' } });
    expect(res.status).toBe(404);
  });
});
