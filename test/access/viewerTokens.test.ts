/**
 * Viewer tokens: minted with an `events:read` key for one organization_id value (and optionally some
 * actions); the hosted viewer's procedures and download show exactly that part of the organization,
 * and nothing else is reachable with the token: other organization_id values, other actions, other
 * organizations, every /v1 route, the tRPC API and dashboard procedures. Expired, tampered-with, forged
 * and orphaned (revoked key) tokens are refused.
 */
import { createHmac } from 'node:crypto';
import { parse } from 'csv-parse/sync';
import { importVerifier, verifyEventInclusion } from '../../src/client/webVerify';
import { call, createEvent, sentEvents } from '../helpers/api';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { eventually } from '../helpers/waiting';

let app: TestApp;
let org: TestOrg;
let other: TestOrg;
beforeAll(async () => {
  app = await startTestApp({ label: 'viewer' });
  org = await app.org({ name: 'Vendor' });
  other = await app.org({ name: 'Other vendor' });
  for (const [customer, action] of [['cust_a', 'invoice.paid'], ['cust_a', 'user.invited'], ['cust_b', 'invoice.paid'], ['cust_a', 'invoice.paid']] as const) {
    await createEvent(app.url, org.key, { organization_id: customer, action, metadata: { field: 'status', old_value: 'open', new_value: customer } });
  }
  // Another organization's events with the same organization_id value: never shown to org's tokens.
  await createEvent(app.url, other.key, { organization_id: 'cust_a', action: 'invoice.paid' });
});
afterAll(() => app.close());

async function mint(body: Record<string, unknown>, key = org.key) {
  return call(`${app.url}/v1/viewer-tokens`, { key, body });
}

/** A viewer procedure over /trpc with the token as bearer. */
async function viewer(path: string, input: unknown, token: string) {
  const url = `${app.url}/trpc/${path}${input === undefined ? '' : `?input=${encodeURIComponent(JSON.stringify(input))}`}`;
  return call(url, { key: token });
}

function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()) as Record<string, unknown>;
}

test('minting: 201 with a signed JWT for 15 minutes by default, the viewer path, and limits on what may be asked', async () => {
  const minted = await mint({ organization_id: 'cust_a' });
  expect(minted.status).toBe(201);
  expect(minted.body.viewer_path).toBe(`/viewer?token=${minted.body.token}`);
  expect(minted.body.viewer_url).toBeNull(); // PUBLIC_URL unset here
  const claims = claimsOf(minted.body.token);
  expect(claims).toMatchObject({ sub: 'cust_a', org: org.id, kid: org.keyId, aud: 'audit-ledger/viewer' });
  expect((claims.exp as number) - (claims.iat as number)).toBe(15 * 60);
  expect(Date.parse(minted.body.expires_at)).toBe((claims.exp as number) * 1000);
  expect((await mint({ organization_id: 'cust_a', expires_in_minutes: 61 })).body).toEqual({ code: 'VALIDATION_FAILED', message: 'Invalid request: expires_in_minutes must be at most 60', fields: ['expires_in_minutes'] });
  expect((await mint({ organization_id: '' })).status).toBe(400);
  expect((await mint({ organization_id: 'cust_a', scope: 'all' })).status).toBe(400);
  // A key without events:read cannot mint.
  const writer = await app.services.stores.apiKeys.forOrg(org.id).create('writer', new Date(), ['events:write']);
  expect((await mint({ organization_id: 'cust_a' }, writer.key)).body).toEqual({ code: 'INSUFFICIENT_SCOPE', message: 'This API key lacks the scope events:read' });
});

test('the viewer lists, reads, proves and exports only its organization_id\'s events', async () => {
  const { token } = (await mint({ organization_id: 'cust_a' })).body;
  expect((await viewer('viewer.scope', undefined, token)).body.result.data).toMatchObject({ organization_id: 'cust_a', actions: null });
  const listed = (await viewer('viewer.events.list', {}, token)).body.result.data;
  expect(listed.data.map((e: any) => e.organization_id)).toEqual(['cust_a', 'cust_a', 'cust_a']);
  expect((await viewer('viewer.events.list', { organization_id: 'cust_a', action: 'invoice.paid' }, token)).body.result.data.data).toHaveLength(2);

  const all = sentEvents((await call(`${app.url}/v1/events`, { key: org.key })).body.data as any[]);
  const mine = all.find((e) => e.organization_id === 'cust_a');
  const theirs = all.find((e) => e.organization_id === 'cust_b');
  expect((await viewer('viewer.events.get', { id: mine.id }, token)).body.result.data).toEqual(mine);
  expect((await viewer('viewer.events.get', { id: theirs.id }, token)).status).toBe(404);
  expect((await viewer('viewer.events.proof', { id: theirs.id }, token)).status).toBe(404);

  // The inclusion proof checks out with the browser's code (WebCrypto), against the served key.
  const proof = await eventually('the event\'s inclusion proof', async () => {
    const res = await viewer('viewer.events.proof', { id: mine.id }, token);
    return res.status === 200 && res;
  }, 10_000);
  const key = (await viewer('viewer.key', undefined, token)).body.result.data.verifier_key;
  expect((await verifyEventInclusion(mine, proof.body.result.data, await importVerifier(key))).failures).toEqual([]);

  const csv = await call(`${app.url}/viewer/export?format=csv&token=${token}`);
  expect(csv.status).toBe(200);
  const rows = parse<{ organization_id: string }>(csv.text, { columns: true });
  expect(rows.map((r) => r.organization_id)).toEqual(['cust_a', 'cust_a', 'cust_a']);
  const json = await call(`${app.url}/viewer/export`, { key: token });
  expect((json.body as any[]).map((e) => e.organization_id)).toEqual(['cust_a', 'cust_a', 'cust_a']);
  // The export is on the organization's own record, by the viewer token.
  const record = (await app.collections.events.find({ tenant: org.id, action: 'audit_ledger.export.run' }).toArray()).at(-1);
  expect(record).toMatchObject({ actor_id: 'viewer:cust_a' });
});

test('scope escapes are refused: other organization_id, other actions, and every route but the viewer\'s', async () => {
  const { token } = (await mint({ organization_id: 'cust_a', actions: ['invoice.paid'] })).body;
  expect((await viewer('viewer.events.list', {}, token)).body.result.data.data.map((e: any) => [e.organization_id, e.action])).toEqual([['cust_a', 'invoice.paid'], ['cust_a', 'invoice.paid']]);
  for (const input of [{ organization_id: 'cust_b' }, { action: 'user.invited' }]) {
    const res = await viewer('viewer.events.list', input, token);
    expect([res.status, res.body.error.data.appCode]).toEqual([403, 'OUTSIDE_VIEWER_SCOPE']);
  }
  expect((await call(`${app.url}/viewer/export?organization_id=cust_b&token=${token}`)).body).toMatchObject({ code: 'OUTSIDE_VIEWER_SCOPE' });
  const invited = sentEvents((await call(`${app.url}/v1/events?action=user.invited`, { key: org.key })).body.data as any[])[0];
  expect((await viewer('viewer.events.get', { id: invited.id }, token)).status).toBe(404);

  // The token is no API key and no session: /v1, tRPC's API and the dashboard's procedures refuse it.
  const rest = ['/v1/events', '/v1/events/export', '/v1/ledger/checkpoint', '/v1/ledger/key', '/v1/streams', `/v1/events/${invited.id}`, '/v1/ledger/proofs', '/v1/ledger/log/checkpoint'];
  for (const path of rest) expect([path, (await call(`${app.url}${path}`, { key: token })).status]).toEqual([path, 401]);
  expect((await mint({ organization_id: 'cust_b' }, token)).status).toBe(401);
  for (const path of ['events.list', 'ledger.checkpoint', 'streams.list', 'dashboard.events.list', 'dashboard.keys.list', 'dashboard.members.list', 'account.me']) {
    const res = await viewer(path, path === 'account.me' ? undefined : {}, token);
    if (path === 'account.me') expect(res.body.result.data).toBeNull();
    else expect([path, res.status]).toEqual([path, 401]);
  }
  // Another organization's events with the same organization_id value stay out of sight.
  const listed = (await viewer('viewer.events.list', {}, token)).body.result.data.data as any[];
  expect(listed.every((e) => e.api_key_id === org.keyId)).toBe(true);
});

test('tampered, forged, expired and orphaned tokens are refused with 401 INVALID_VIEWER_TOKEN', async () => {
  const { token } = (await mint({ organization_id: 'cust_a' })).body;
  const [header, payload, signature] = token.split('.') as [string, string, string];
  const widened = Buffer.from(JSON.stringify({ ...claimsOf(token), sub: 'cust_b' })).toString('base64url');
  const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
  const forged = `${header}.${widened}.${createHmac('sha256', 'guessed secret').update(`${header}.${widened}`).digest('base64url')}`;
  for (const bad of [`${header}.${widened}.${signature}`, none, forged, token.slice(0, -2), 'not.a.token', `${token}x`]) {
    const res = await viewer('viewer.events.list', {}, bad);
    expect([res.status, res.body.error?.data?.appCode]).toEqual([401, 'INVALID_VIEWER_TOKEN']);
    expect((await call(`${app.url}/viewer/export?token=${encodeURIComponent(bad)}`)).status).toBe(401);
  }
  // Revoking the key that minted a token ends it.
  const minter = await app.key(org.id);
  const orphan = (await mint({ organization_id: 'cust_a' }, minter.key)).body.token;
  expect((await viewer('viewer.scope', undefined, orphan)).status).toBe(200);
  await app.services.stores.apiKeys.revoke(minter.keyId, new Date());
  expect((await viewer('viewer.scope', undefined, orphan)).status).toBe(401);

  // Expiry, with no leeway.
  let now = Date.now();
  const clocked = await startTestApp({ label: 'viewer_clock', clock: { now: () => new Date(now) } });
  try {
    const o = await clocked.org();
    const short = (await call(`${clocked.url}/v1/viewer-tokens`, { key: o.key, body: { organization_id: 'cust_a', expires_in_minutes: 1 } })).body.token;
    const at = async () => (await call(`${clocked.url}/trpc/viewer.scope`, { key: short })).status;
    expect(await at()).toBe(200);
    now += 59_000;
    expect(await at()).toBe(200);
    now += 2_000;
    expect(await at()).toBe(401);
  } finally {
    await clocked.close();
  }
});

test('the hosted page may be framed (VIEWER_FRAME_ANCESTORS), is never cached and sends no Referer; the dashboard may not be framed', async () => {
  const page = await fetch(`${app.url}/viewer?token=x`, { headers: { accept: 'text/html' } });
  expect(page.status).toBe(200);
  expect(page.headers.get('content-security-policy')).toContain('frame-ancestors *');
  expect(page.headers.get('x-frame-options')).toBeNull();
  expect(page.headers.get('referrer-policy')).toBe('no-referrer');
  expect(page.headers.get('cache-control')).toBe('no-store');
  expect(await page.text()).toContain('Audit trail');
  const dashboard = await fetch(`${app.url}/events`, { headers: { accept: 'text/html' } });
  expect(dashboard.headers.get('x-frame-options')).toBe('DENY');
  expect(dashboard.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
});

test('a viewer token gets the rate a key or a session gets: 429 RATE_LIMITED past it, before the token is even checked', async () => {
  // The clock held still: the bucket refills by the injected clock, so however slow the machine, nothing refills mid-test.
  const frozen = new Date();
  const limited = await startTestApp({ label: 'viewer_rate', limits: { ratePerSecond: 1, rateBurst: 3 }, clock: { now: () => frozen } });
  try {
    const o = await limited.org();
    const { token } = (await call(`${limited.url}/v1/viewer-tokens`, { key: o.key, body: { organization_id: 'cust_a' } })).body;
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await call(`${limited.url}/trpc/viewer.scope`, { key: token })).status);
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
    expect(statuses.slice(3)).toEqual([429, 429]);
  } finally {
    await limited.close();
  }
});
