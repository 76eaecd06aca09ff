/** Logs are structured, carry a request id, and never contain an API key. */
import { call, eventBody } from '../helpers/api';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';

const lines: string[] = [];
let app: TestApp;
let org: TestOrg;

beforeAll(async () => {
  app = await startTestApp({ label: 'logging', logTo: { write: (line) => lines.push(line) } });
  org = await app.org();
});
afterAll(() => app.close());

test('one JSON line per request with its request id; keys appear nowhere', async () => {
  const revoked = await app.key(org.id);
  await app.services.stores.apiKeys.revoke(revoked.keyId, new Date());
  const responses = await Promise.all([
    call(`${app.url}/v1/events`, { key: org.key, body: eventBody(), headers: { 'x-request-id': 'trace-123', 'content-type': 'application/json' } }),
    call(`${app.url}/v1/events`, { key: revoked.key, body: eventBody() }),
    call(`${app.url}/v1/events?actor_id=secret-filter-value`, { key: org.key }),
    call(`${app.url}/v1/events/export?format=csv`, { key: org.key }),
    call(`${app.url}/trpc/events.list?input=%7B%7D`, { key: org.key }),
    call(`${app.url}/v1/events`, { key: org.key, rawBody: '{broken' }),
  ]);
  expect(responses.map((r) => r.status)).toEqual([201, 401, 200, 200, 200, 400]);
  expect(responses[0].headers.get('x-request-id')).toBe('trace-123');

  const entries = lines.map((line) => JSON.parse(line) as { msg: string; requestId?: string; path?: string; status?: number });
  const requests = entries.filter((e) => e.msg === 'request');
  expect(requests.length).toBeGreaterThanOrEqual(6);
  expect(requests.find((e) => e.requestId === 'trace-123')).toMatchObject({ path: '/v1/events', status: 201 });
  // The request line has exactly these fields (it is written without the redaction pass: http/requestContext.ts).
  for (const line of requests) expect(Object.keys(line).sort()).toEqual(['level', 'method', 'ms', 'msg', 'path', 'requestId', 'service', 'status', 'time']);
  const text = lines.join('\n');
  for (const secret of [org.key, revoked.key, 'secret-filter-value']) expect(text).not.toContain(secret);
});

test('an invitation link\'s token is not logged with its path', async () => {
  const token = 'ali_thisIsTheInvitationSecretLoggedNowhere';
  expect((await call(`${app.url}/invite/${token}`)).status).toBe(200);
  expect((await call(`${app.url}/invite/${token}/more`)).status).toBe(200);
  // However spelt: the dashboard's router ignores case and decodes escapes.
  for (const spelling of ['/INVITE/', '/Invite/', '/%69nvite/', '//invite/', '/invite//']) await call(`${app.url}${spelling}${token}`);
  expect(lines.join('\n')).not.toContain('InvitationSecret');
  const paths = lines.map((line) => JSON.parse(line) as { msg: string; path?: string }).filter((e) => e.msg === 'request').map((e) => e.path);
  expect(paths.filter((path) => path === '/invite/[redacted]')).toHaveLength(7);
});
