/** Logs are structured, carry a request id, and never contain an API key. */
import { call, eventBody } from '../helpers/api';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { spawn } from 'node:child_process';
import { ROOT, type ServerProcess, startServerProcess } from '../helpers/processes';
import { eventually } from '../helpers/waiting';

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

describe('the log of a service process (stdout, JSON)', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess({ MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName });
  });
  afterAll(() => server.stop());

  const requestLines = (stdout: string, id: string) =>
    stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { msg: string; requestId?: string }).filter((e) => e.msg === 'request' && e.requestId?.startsWith(id));

  // Lines are gathered before they are written (src/logger.ts): none may wait for more traffic, nor be lost at exit.
  test('a request line is written while the service is idle after it', async () => {
    expect((await call(`${server.url}/healthz`, { headers: { 'x-request-id': 'idle-1' } })).status).toBe(200);
    await eventually('the idle request\'s line', () => requestLines(server.output().stdout, 'idle-1').length === 1, 10_000);
  });

  test('every line logged before the process exits is written, the last ones too', async () => {
    const statuses = await Promise.all(Array.from({ length: 30 }, (_, i) => call(`${server.url}/healthz`, { headers: { 'x-request-id': `exit-${i}` } }).then((r) => r.status)));
    expect(statuses.every((status) => status === 200)).toBe(true);
    await server.stop();
    expect(requestLines(server.output().stdout, 'exit-')).toHaveLength(30);
    expect(server.output().stdout).toContain('"msg":"shutting down"');
  });
});

test('a process whose log reader is gone still exits, with lines waiting to be written', async () => {
  // `npm start | viewer` ended by Ctrl-C: the viewer goes first, and the lines that wait at exit have nowhere
  // to go. The logger writes them synchronously at exit; it must give up on a broken pipe, not retry it.
  const script = [
    "const { createLogger } = require('./src/logger');",
    "const log = createLogger('info');",
    "process.stdin.once('data', () => { log.info('the last line'); process.exit(0); });",
    "process.stderr.write('ready\\n');",
  ].join('\n');
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT, env: { ...process.env, LOG_FORMAT: 'json' }, stdio: ['pipe', 'pipe', 'pipe'] });
  try {
    await new Promise<void>((resolve) => child.stderr.once('data', () => resolve()));
    child.stdout.destroy();
    child.stdin.write('exit\n');
    await eventually('the process to exit', () => child.exitCode !== null || child.signalCode !== null, 20_000);
    expect(child.exitCode).toBe(0);
  } finally {
    child.kill('SIGKILL');
  }
});
