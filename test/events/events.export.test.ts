/** GET /v1/events/export: JSON and CSV bodies, filters, headers, and a client that disconnects. */
import { parse } from 'csv-parse/sync';
import { request } from 'node:http';
import { call, createEvent, query, sentEvents } from '../helpers/api';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { seedEvents } from '../helpers/seed';
import { toEvent, toEventJson } from '../../src/db/documents';
import { eventually } from '../helpers/waiting';

let app: TestApp;
let org: TestOrg;
let base: string;

const HEADER = ['id', 'timestamp', 'actor_id', 'actor_name', 'action', 'resource_type', 'resource_id', 'resource_name', 'organization_id'];

beforeAll(async () => {
  app = await startTestApp({ label: 'export' });
  org = await app.org();
  base = `${app.url}/v1/events`;
});
afterAll(() => app.close());

const create = (o: TestOrg, overrides: Record<string, unknown>) => createEvent(app.url, o.key, overrides);

describe('JSON', () => {
  test('an array of every matching event, newest first, no pagination; same objects as the list', async () => {
    const o = await app.org();
    for (let i = 0; i < 120; i++) await create(o, { timestamp: new Date(Date.UTC(2024, 0, 1, 0, 0, i % 7)).toISOString() });
    const res = await call(`${base}/export`, { key: o.key });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="audit_logs.json"');
    expect(res.body).toHaveLength(120);
    const listed = await call(`${base}?limit=1000`, { key: o.key });
    // The list has one more: the export's own record (audit_ledger.export.run), written after the export was pinned.
    expect(res.body).toEqual(sentEvents(listed.body.data));
    expect(listed.body.data[0]).toMatchObject({ action: 'audit_ledger.export.run', metadata: { format: 'json', tree_size: 120 } });
  });

  test('default format is json; format=json is the same', async () => {
    const o = await app.org();
    await create(o, {});
    const a = await call(`${base}/export`, { key: o.key });
    const b = await call(`${base}/export?format=json`, { key: o.key });
    // The second has the first's record in front.
    expect(b.body.slice(1)).toEqual(a.body);
    expect(b.body[0]).toMatchObject({ action: 'audit_ledger.export.run' });
  });

  test('an empty result is an empty array', async () => {
    const o = await app.org();
    const res = await call(`${base}/export`, { key: o.key });
    expect(res.status).toBe(200);
    expect(res.text).toBe('[]');
  });

  test('filters are the list filters', async () => {
    const o = await app.org();
    await create(o, { actor: { id: 'alice' }, timestamp: '2024-02-01T10:00:00Z' });
    await create(o, { actor: { id: 'alice' }, timestamp: '2024-02-03T10:00:00Z' });
    await create(o, { actor: { id: 'bob' }, timestamp: '2024-02-02T10:00:00Z' });
    const res = await call(`${base}/export${query({ actor_id: 'alice', start_date: '2024-02-01', end_date: '2024-02-02T23:59:59Z' })}`, { key: o.key });
    expect(res.body.map((e: any) => e.timestamp)).toEqual(['2024-02-01T10:00:00.000Z']);
  });

  test('metadata is exported exactly, and the fast serializer matches JSON.stringify of the API object', async () => {
    const o = await app.org();
    const metadata = { 'a.b': { $c: [[1, '"quoted"'], '\u2028'] }, emoji: '🔐' };
    await create(o, { metadata, actor: { id: 'm', name: null } });
    const res = await call(`${base}/export`, { key: o.key });
    expect(res.body[0].metadata).toEqual(metadata);
    const doc = await app.collections.events.findOne({ tenant: o.id });
    expect(doc).not.toBeNull();
    if (doc) expect(toEventJson(doc)).toBe(JSON.stringify(toEvent(doc)));
  });
});

describe('CSV', () => {
  test('the spec header and columns, RFC 4180 quoting, formulas neutralized, no metadata', async () => {
    const o = await app.org();
    const tricky = [
      { actor: { id: 'plain', name: 'Plain Name' }, resource: { type: 'doc', id: 'd1', name: 'Q3, "final" report' } },
      { actor: { id: 'multi', name: 'Line one\nLine two\r\nLine three' }, resource: { type: 'doc', id: 'd2' } },
      { actor: { id: '=HYPERLINK("http://evil","x")', name: '+SUM(A1:A2)' }, resource: { type: 'doc', id: '-2+3', name: '@cmd' } },
      { actor: { id: '\tTAB', name: '\rCR' }, resource: { type: 'doc', id: 'd4', name: 'ok' } },
    ];
    for (const [i, body] of tricky.entries()) {
      await create(o, { ...body, action: 'doc.updated', timestamp: `2024-04-0${i + 1}T00:00:00Z`, metadata: { secret: 'not in csv' } });
    }
    const res = await call(`${base}/export?format=csv`, { key: o.key });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="audit_logs.csv"');
    expect(res.text.split('\r\n')[0]).toBe(HEADER.join(','));
    expect(res.text).not.toContain('not in csv');

    const rows = parse<Record<string, string>>(res.text, { columns: true, relax_column_count: false });
    expect(Object.keys(rows[0] ?? {})).toEqual(HEADER);
    expect(rows).toHaveLength(4);
    const byTime = [...rows].sort((x, y) => (x.timestamp ?? '').localeCompare(y.timestamp ?? ''));
    expect(byTime[0]).toMatchObject({ actor_id: 'plain', actor_name: 'Plain Name', resource_name: 'Q3, "final" report', organization_id: o.id });
    expect(byTime[1]).toMatchObject({ actor_name: 'Line one\nLine two\r\nLine three', resource_name: '' });
    expect(byTime[2]).toMatchObject({ actor_id: `'=HYPERLINK("http://evil","x")`, actor_name: "'+SUM(A1:A2)", resource_id: "'-2+3", resource_name: "'@cmd" });
    expect(byTime[3]).toMatchObject({ actor_id: "'\tTAB", actor_name: "'\rCR" });
    for (const row of rows) {
      expect(row.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      for (const cell of Object.values(row)) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
    }
  });

  test('an empty result is just the header', async () => {
    const o = await app.org();
    const res = await call(`${base}/export?format=csv`, { key: o.key });
    expect(res.text).toBe(HEADER.join(','));
  });
});

describe('errors', () => {
  test.each(['xml', 'CSV', '', 'json,csv'])('format=%s → 400', async (format) => {
    const res = await call(`${base}/export?format=${format}`, { key: org.key });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 'VALIDATION_FAILED', message: 'Invalid request: format must be json or csv', fields: ['format'] });
  });

  test('a repeated format is refused', async () => {
    const res = await call(`${base}/export?format=csv&format=json`, { key: org.key });
    expect(res.status).toBe(400);
  });

  test('invalid dates and unknown parameters → 400', async () => {
    expect((await call(`${base}/export?start_date=2024-02-30`, { key: org.key })).status).toBe(400);
    expect((await call(`${base}/export?limit=5`, { key: org.key })).status).toBe(400);
    expect((await call(`${base}/export?cursor=abc`, { key: org.key })).status).toBe(400);
  });
});

describe('a client that disconnects', () => {
  test('stops the query: the database cursor is closed long before the end', async () => {
    const o = await app.org();
    const total = 20_000;
    await seedEvents(app, o, total);
    const rowsBefore = (await app.http.metrics.exportRows.get()).values[0]?.value ?? 0;

    await new Promise<void>((resolve, reject) => {
      const req = request(`${base}/export?format=csv`, { headers: { authorization: `Bearer ${o.key}` } }, (res) => {
        expect(res.statusCode).toBe(200);
        res.once('data', () => {
          // Read one chunk, then go away without reading the rest.
          req.destroy();
          resolve();
        });
      });
      req.on('error', (err) => {
        if (!req.destroyed) reject(err);
      });
      req.end();
    });

    // The server notices the closed socket and closes its cursor.
    await eventually('no open export streams', async () => (await app.http.metrics.exportStreams.get()).values[0]?.value === 0, 10_000, 50);
    const read = ((await app.http.metrics.exportRows.get()).values[0]?.value ?? 0) - rowsBefore;
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(total / 2);
  });
});
