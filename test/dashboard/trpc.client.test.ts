/** TypeScript clients call the router directly through /trpc, typed by `AppRouter`. */
import { createTRPCClient, httpBatchLink, httpBatchStreamLink, TRPCClientError } from '@trpc/client';
import type { AppRouter } from '../../src/trpc/router';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';

let app: TestApp;
let org: TestOrg;

function client(key: string | null, stream = false) {
  const options = { url: `${app.url}/trpc`, headers: () => (key ? { authorization: `Bearer ${key}` } : {}) };
  return createTRPCClient<AppRouter>({ links: [stream ? httpBatchStreamLink(options) : httpBatchLink(options)] });
}

beforeAll(async () => {
  app = await startTestApp({ label: 'trpc' });
  org = await app.org();
});
afterAll(() => app.close());

test('create, get and list with full types', async () => {
  const trpc = client(org.key);
  const created = await trpc.events.create.mutate({
    actor: { id: 'ts_user', name: 'TS' },
    action: 'project.archived',
    resource: { type: 'project', id: 'p1' },
    metadata: { reason: 'done' },
    timestamp: '2024-08-08T08:08:08.808+02:00',
  });
  // These lines type-check only if the router's types reach the client.
  // A write answers the stored event, or (a replay's event removed since) a RemovedEvent: narrowed by its fields.
  if ('removed' in created.event) throw new Error('a new event cannot have been removed');
  const id: string = created.event.id;
  const when: string = created.event.timestamp;
  expect(created.success).toBe(true);
  expect(when).toBe('2024-08-08T06:08:08.808Z');

  const read = await trpc.events.get.query({ id });
  expect(read).toEqual(created.event);

  const [page, again] = await Promise.all([trpc.events.list.query({ actor_id: 'ts_user', limit: 5 }), trpc.events.get.query({ id })]);
  expect(page.data.map((e) => e.id)).toEqual([id]);
  expect(page.has_more).toBe(false);
  expect(again.id).toBe(id);
});

test('errors carry the same message and code as REST', async () => {
  const trpc = client(org.key);
  // @ts-expect-error: action and resource are required, and the compiler says so too.
  const missing = trpc.events.create.mutate({ actor: { id: 'x' } });
  await expect(missing).rejects.toBeInstanceOf(TRPCClientError);
  await expect(missing).rejects.toMatchObject({ message: 'Missing required fields', data: { appCode: 'MISSING_REQUIRED_FIELDS', httpStatus: 400 } });

  await expect(trpc.events.get.query({ id: '0190c8e4-0000-7000-8000-000000000000' })).rejects.toMatchObject({
    message: 'Event not found',
    data: { appCode: 'EVENT_NOT_FOUND', httpStatus: 404 },
  });

  await expect(client(null).events.create.mutate({ actor: { id: 'a' }, action: 'a.b', resource: { type: 't', id: 'i' } })).rejects.toMatchObject({
    message: 'Missing or invalid authorization header',
    data: { httpStatus: 401 },
  });
  await expect(client('alk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA').events.list.query({})).rejects.toMatchObject({
    message: 'Missing or invalid API key',
  });
});

test('error responses carry no stack', async () => {
  const res = await fetch(`${app.url}/trpc/events.create`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${org.key}` }, body: '{"actor":1}' });
  const text = await res.text();
  expect(res.status).toBe(400);
  expect(text).not.toContain('stack');
});

test('export streams every matching event through httpBatchStreamLink', async () => {
  const o = await app.org();
  const trpc = client(o.key, true);
  for (let i = 0; i < 25; i++) await trpc.events.create.mutate({ actor: { id: `s${i % 2}` }, action: 'a.b', resource: { type: 't', id: `${i}` } });
  const seen: string[] = [];
  for await (const event of await trpc.events.export.query({ actor_id: 's1' })) seen.push(event.resource_id);
  expect(seen).toHaveLength(12);
  expect(new Set(seen).size).toBe(12);
});
