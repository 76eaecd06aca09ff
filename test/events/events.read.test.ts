/** GET /v1/events/:id and GET /v1/events: filters, dates, ordering and keyset pagination. */
import { call, createEvent, query } from '../helpers/api';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';

let app: TestApp;
let org: TestOrg;
let events: string;

const create = (o: TestOrg, overrides: Record<string, unknown>) => createEvent(app.url, o.key, overrides);

/** Follows next_cursor to the end; returns every id in order. */
async function readAll(o: TestOrg, params: Record<string, string | number | undefined>, onPage?: (page: number) => Promise<void>): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1000; page++) {
    const res = await call(`${events}${query({ ...params, cursor })}`, { key: o.key });
    expect(res.status).toBe(200);
    ids.push(...res.body.data.map((e: { id: string }) => e.id));
    await onPage?.(page);
    if (!res.body.has_more) {
      expect(res.body.next_cursor).toBeNull();
      return ids;
    }
    expect(typeof res.body.next_cursor).toBe('string');
    cursor = res.body.next_cursor;
  }
  throw new Error('pagination did not end');
}

beforeAll(async () => {
  app = await startTestApp({ label: 'read' });
  org = await app.org();
  events = `${app.url}/v1/events`;
});
afterAll(() => app.close());

describe('GET /v1/events/:id', () => {
  test('returns the event unwrapped', async () => {
    const event = await create(org, {});
    const res = await call(`${events}/${event.id}`, { key: org.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(event);
  });

  test.each(['0190c8e4-0000-7000-8000-000000000000', 'not-a-uuid', 'x'.repeat(300), '%24ne'])('unknown id %s → 404 Event not found', async (id) => {
    const res = await call(`${events}/${id}`, { key: org.key });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ message: 'Event not found', code: 'EVENT_NOT_FOUND' });
  });
});

describe('GET /v1/events', () => {
  let o: TestOrg;
  beforeAll(async () => {
    o = await app.org();
    await create(o, { actor: { id: 'alice' }, action: 'invoice.created', resource: { type: 'invoice', id: 'inv_1' }, timestamp: '2024-03-01T00:00:00.000Z' });
    await create(o, { actor: { id: 'bob' }, action: 'invoice.updated', resource: { type: 'invoice', id: 'inv_1' }, timestamp: '2024-03-01T23:59:59.999Z' });
    await create(o, { actor: { id: 'alice' }, action: 'user.invited', resource: { type: 'user', id: 'u_9' }, timestamp: '2024-03-02T00:00:00.000Z' });
    await create(o, { actor: { id: 'carol' }, action: 'invoice.deleted', resource: { type: 'invoice', id: 'inv_2' }, timestamp: '2024-02-29T12:00:00.000Z', organization_id: 'sub_org_1' });
  });

  const actions = async (params: Record<string, string | number | undefined>) => {
    const res = await call(`${events}${query(params)}`, { key: o.key });
    expect(res.status).toBe(200);
    return res.body.data.map((e: { action: string }) => e.action);
  };

  test('envelope and newest-first order', async () => {
    const res = await call(events, { key: o.key });
    expect(res.body).toEqual({ data: expect.any(Array), has_more: false, next_cursor: null });
    expect(res.body.data.map((e: { action: string }) => e.action)).toEqual(['user.invited', 'invoice.updated', 'invoice.created', 'invoice.deleted']);
  });

  test.each([
    [{ actor_id: 'alice' }, ['user.invited', 'invoice.created']],
    [{ action: 'invoice.updated' }, ['invoice.updated']],
    [{ resource_type: 'invoice' }, ['invoice.updated', 'invoice.created', 'invoice.deleted']],
    [{ resource_type: 'invoice', resource_id: 'inv_1' }, ['invoice.updated', 'invoice.created']],
    [{ organization_id: 'sub_org_1' }, ['invoice.deleted']],
    [{ actor_id: 'alice', action: 'invoice.created' }, ['invoice.created']],
    [{ actor_id: 'nobody' }, []],
  ])('filter %j', async (params, expected) => {
    expect(await actions(params)).toEqual(expected);
  });

  test.each([
    [{ start_date: '2024-03-01', end_date: '2024-03-01' }, ['invoice.updated', 'invoice.created'], 'a date-only end includes that whole UTC day'],
    [{ start_date: '2024-03-01T00:00:00Z' }, ['user.invited', 'invoice.updated', 'invoice.created'], 'start is inclusive'],
    [{ end_date: '2024-03-01T00:00:00.000Z' }, ['invoice.created', 'invoice.deleted'], 'end is inclusive'],
    [{ start_date: '2024-03-01T00:00:00.001Z', end_date: '2024-03-01T23:59:59.998Z' }, [], 'milliseconds count'],
    [{ end_date: '2024-02-29' }, ['invoice.deleted'], 'leap day'],
    [{ start_date: '2024-03-01T01:00:00+02:00', end_date: '2024-03-02T01:00:00+01:00' }, ['user.invited', 'invoice.updated', 'invoice.created'], 'offsets'],
  ])('dates %j (%#)', async (params, expected, _why) => {
    expect(await actions(params)).toEqual(expected);
  });

  test.each([
    [{ start_date: '2024-02-30' }, 'start_date must be a valid date (YYYY-MM-DD) or ISO 8601 datetime'],
    [{ end_date: 'tomorrow' }, 'end_date must be a valid date (YYYY-MM-DD) or ISO 8601 datetime'],
    [{ end_date: '2024-13-01' }, 'end_date must be a valid date (YYYY-MM-DD) or ISO 8601 datetime'],
    [{ start_date: '2024-03-02', end_date: '2024-03-01' }, 'start_date must not be after end_date'],
    [{ limit: 0 }, 'limit must be at least 1'],
    [{ limit: 1001 }, 'limit must be at most 1000'],
    [{ limit: 'ten' }, 'limit must be a number'],
    [{ limit: 2.5 }, 'limit must be a whole number'],
    [{ cursor: 'garbage' }, 'cursor is not valid; pass next_cursor from the previous page unchanged'],
    [{ actor_id: '' }, 'actor_id must not be empty'],
    [{ colour: 'red' }, 'colour is not a known field'],
  ])('invalid %j → 400: %s', async (params, clause) => {
    const res = await call(`${events}${query(params)}`, { key: o.key });
    expect({ status: res.status, message: res.body.message }).toEqual({ status: 400, message: `Invalid request: ${clause}` });
  });

  test('limit 1 and 1000 are accepted; default page size is 50', async () => {
    const p = await app.org();
    for (let i = 0; i < 55; i++) await create(p, { timestamp: '2024-01-01T00:00:00Z' });
    expect((await call(`${events}?limit=1`, { key: p.key })).body.data).toHaveLength(1);
    expect((await call(`${events}?limit=1000`, { key: p.key })).body.data).toHaveLength(55);
    const page = await call(events, { key: p.key });
    expect(page.body.data).toHaveLength(50);
    expect(page.body.has_more).toBe(true);
  });
});

describe('keyset pagination', () => {
  test('equal timestamps: every event exactly once, in (timestamp, id) order', async () => {
    const p = await app.org();
    const made: string[] = [];
    for (let i = 0; i < 23; i++) made.push((await create(p, { timestamp: '2024-05-05T05:05:05.555Z' })).id);
    for (let i = 0; i < 7; i++) made.push((await create(p, { timestamp: `2024-05-0${i + 1}T00:00:00Z` })).id);
    const seen = await readAll(p, { limit: 4 });
    expect(seen).toHaveLength(30);
    expect(new Set(seen)).toEqual(new Set(made));
    // Newest first: the 23 equal timestamps (2024-05-05T05:05) come after the later-dated 05-06 and 05-07 events.
    const listed = (await call(`${events}?limit=1000`, { key: p.key })).body.data as { id: string }[];
    expect(seen).toEqual(listed.map((e) => e.id));
  });

  test('backdated events that arrive during pagination are found, nothing repeats', async () => {
    const p = await app.org();
    const made: string[] = [];
    for (let i = 0; i < 20; i++) made.push((await create(p, { timestamp: `2024-06-01T00:00:${String(i).padStart(2, '0')}Z` })).id);
    const late: string[] = [];
    const seen = await readAll(p, { limit: 3 }, async (page) => {
      if (page < 4) {
        // Older than anything listed so far, and some equal to the oldest: they sort after the cursor.
        late.push((await create(p, { timestamp: '2024-05-01T00:00:00Z' })).id);
        late.push((await create(p, { timestamp: '2024-06-01T00:00:00Z' })).id);
      }
    });
    expect(new Set(seen).size).toBe(seen.length);
    expect(new Set(seen)).toEqual(new Set([...made, ...late]));
  });

  test('filters hold across pages', async () => {
    const p = await app.org();
    for (let i = 0; i < 12; i++) await create(p, { actor: { id: i % 3 === 0 ? 'target' : 'other' }, timestamp: '2024-07-07T07:07:07Z' });
    const seen = await readAll(p, { actor_id: 'target', limit: 2 });
    expect(seen).toHaveLength(4);
  });
});
