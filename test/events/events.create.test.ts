/** POST /v1/events: the happy path and every error the spec and the issue name. */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { canonicalJson } from '../../src/domain/ledger/formats';
import { call, eventBody } from '../helpers/api';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';

let app: TestApp;
let org: TestOrg;
let events: string;

beforeAll(async () => {
  app = await startTestApp({ label: 'create' });
  org = await app.org();
  events = `${app.url}/v1/events`;
});
afterAll(() => app.close());

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('creating an event', () => {
  test('201 with success and the full event', async () => {
    const res = await call(events, { key: org.key, body: eventBody({ timestamp: '2024-01-15T10:30:00Z' }) });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      event: {
        id: expect.stringMatching(UUID_V7),
        timestamp: '2024-01-15T10:30:00.000Z',
        actor_id: 'user_123',
        actor_name: 'Jane Admin',
        actor_email: 'jane@example.com',
        action: 'user.role_changed',
        resource_type: 'user',
        resource_id: 'user_456',
        resource_name: 'John Doe',
        metadata: { field: 'role', old_value: 'member', new_value: 'admin' },
        organization_id: org.id,
        api_key_id: org.keyId,
      },
      // The ledger receipt (issue 11): its place in the organization's log and the hash the leaf commits to.
      // seq is what people are shown; leaf_index, the tree's position the proofs use, is seq - 1.
      ledger: {
        seq: expect.any(Number),
        leaf_index: expect.any(Number),
        event_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
        // A v2 leaf (issue 25): the salted commitment the leaf holds, and the salt that opens it.
        event_commitment: expect.stringMatching(/^[0-9a-f]{64}$/),
        salt: expect.stringMatching(/^[0-9a-f]{64}$/),
      },
    });
    expect(res.body.ledger.leaf_index).toBe(res.body.ledger.seq - 1);
  });

  test('the minimal body: optional fields are null, metadata is an empty object, timestamp is the receive time', async () => {
    const before = Date.now();
    const res = await call(events, {
      key: org.key,
      body: { actor: { id: 'a' }, action: 'invoice.created', resource: { type: 'invoice', id: 'inv_1' } },
    });
    const after = Date.now();
    expect(res.status).toBe(201);
    const event = res.body.event;
    expect(event).toMatchObject({ actor_name: null, actor_email: null, resource_name: null, metadata: {}, organization_id: org.id });
    expect(event.timestamp).toMatch(ISO_MS);
    const t = Date.parse(event.timestamp);
    expect(t).toBeGreaterThanOrEqual(before - 1);
    expect(t).toBeLessThanOrEqual(after + 1);
  });

  test('the stored event reads back exactly as created', async () => {
    const created = await call(events, { key: org.key, body: eventBody() });
    const read = await call(`${events}/${created.body.event.id}`, { key: org.key });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body.event);
  });

  test('event ids are distinct and time-ordered', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await call(events, { key: org.key, body: eventBody() })).body.event.id);
    expect(new Set(ids).size).toBe(5);
    expect([...ids].sort()).toEqual(ids);
  });

  test.each([
    ['2024-01-15T10:30:00Z', '2024-01-15T10:30:00.000Z'],
    ['2024-01-15T10:30:00.123Z', '2024-01-15T10:30:00.123Z'],
    ['2024-01-15T10:30:00.123456Z', '2024-01-15T10:30:00.123Z'],
    ['2024-01-15T12:30:00+02:00', '2024-01-15T10:30:00.000Z'],
    ['2024-01-15T05:00:00.5-05:30', '2024-01-15T10:30:00.500Z'],
    ['2024-01-15T10:30Z', '2024-01-15T10:30:00.000Z'],
    ['2024-02-29T23:59:59.999Z', '2024-02-29T23:59:59.999Z'],
  ])('timestamp %s is stored as %s', async (given, stored) => {
    const res = await call(events, { key: org.key, body: eventBody({ timestamp: given }) });
    expect(res.status).toBe(201);
    expect(res.body.event.timestamp).toBe(stored);
  });

  test('Content-Type with a charset works like application/json', async () => {
    const res = await call(events, {
      key: org.key,
      rawBody: JSON.stringify(eventBody()),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(res.status).toBe(201);
    expect(res.body.event.actor_id).toBe('user_123');
  });

  test.each(['Application/JSON', 'APPLICATION/JSON; charset=UTF-8', ' application/Json '])('Content-Type %j is application/json too (media types ignore case)', async (type) => {
    const res = await call(events, { key: org.key, rawBody: JSON.stringify(eventBody()), headers: { 'content-type': type } });
    expect(res.status).toBe(201);
    expect(res.body.event.actor_id).toBe('user_123');
  });

  test('null optional fields count as not given', async () => {
    const res = await call(events, {
      key: org.key,
      body: { actor: { id: 'a', name: null, email: null }, action: 'x.y', resource: { type: 't', id: 'i', name: null }, metadata: null, organization_id: null, timestamp: null },
    });
    expect(res.status).toBe(201);
    expect(res.body.event).toMatchObject({ actor_name: null, actor_email: null, resource_name: null, metadata: {}, organization_id: org.id });
  });

  test('metadata keeps any JSON object exactly: dots, dollars, nested arrays, unicode, empty keys', async () => {
    const metadata = JSON.parse(
      '{"a.b":1,"$set":{"x":2},"nested":[[1,[2,[3]]],[]],"emoji":"👩‍💻 ünïcödé \\u0000 nul","constructor":{"name":"x"},' +
        '"deep":{"k.e.y":{"$in":[null,true,false,-0.5,1e21]}},"":"empty key","big":12345678901234567}',
    ) as Record<string, unknown>;
    const res = await call(events, { key: org.key, body: eventBody({ metadata }) });
    expect(res.status).toBe(201);
    const read = await call(`${events}/${res.body.event.id}`, { key: org.key });
    // Compared as text, so key order and every escape count.
    expect(JSON.stringify(read.body.metadata)).toBe(JSON.stringify(metadata));
    expect(JSON.stringify(res.body.event.metadata)).toBe(JSON.stringify(metadata));
  });

  test.each([65, 10_000, 300_000])('metadata nested %i levels deep → 400, nothing stored (64 levels are fine)', async (depth) => {
    const before = await app.collections.events.countDocuments({ tenant: org.id });
    const nested = `{"x":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
    const rawBody = `{"actor":{"id":"a"},"action":"a.b","resource":{"type":"t","id":"i"},"metadata":${nested}}`;
    const res = await call(events, { key: org.key, rawBody });
    expect(res.status).toBe(400);
    expect(res.body.message).toContain('metadata must not nest objects or arrays more than 64 levels deep');
    expect(await app.collections.events.countDocuments({ tenant: org.id })).toBe(before);
    // The same through /trpc, which parses the body itself.
    const viaTrpc = await call(`${app.url}/trpc/events.create`, { key: org.key, rawBody });
    expect(viaTrpc.status).toBe(400);
  });

  test('metadata nested exactly 64 levels deep is kept', async () => {
    const metadata = JSON.parse(`{"x":${'['.repeat(63)}1${']'.repeat(63)}}`) as Record<string, unknown>;
    const res = await call(events, { key: org.key, body: eventBody({ metadata }) });
    expect(res.status).toBe(201);
    expect(res.body.event.metadata).toEqual(metadata);
  });

  test('a "__proto__" key is refused with a clear 400 (prototype pollution guard), nothing stored', async () => {
    const before = await app.collections.events.countDocuments({ tenant: org.id });
    const res = await call(events, { key: org.key, rawBody: '{"actor":{"id":"a"},"action":"a.b","resource":{"type":"t","id":"i"},"metadata":{"__proto__":{"admin":true}}}' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message: 'Request body must not contain "__proto__" or "constructor.prototype" keys', code: 'VALIDATION_FAILED' });
    expect(await app.collections.events.countDocuments({ tenant: org.id })).toBe(before);
  });

  test('through /trpc (which parses its own bodies) a metadata "__proto__" key is kept: every answer shows the event the ledger hashed', async () => {
    const rawBody = '{"actor":{"id":"a"},"action":"a.b","resource":{"type":"t","id":"i"},"metadata":{"__proto__":{"p":1},"k":1}}';
    const created = await call(`${app.url}/trpc/events.create`, { key: org.key, rawBody });
    expect(created.status).toBe(200);
    const { event, ledger } = created.body.result.data;
    const read = await call(`${events}/${event.id as string}`, { key: org.key });
    for (const shown of [event, read.body]) {
      // As text: JSON.parse keeps "__proto__" as the object's own key, and so does JSON.stringify.
      expect(JSON.stringify(shown.metadata)).toBe('{"__proto__":{"p":1},"k":1}');
      expect(createHash('sha256').update(canonicalJson(shown)).digest('hex')).toBe(ledger.event_sha256);
    }
  });
});

describe('missing required fields', () => {
  const full = eventBody();
  test.each([
    ['actor.id', { ...full, actor: { name: 'x' } }],
    ['actor', { action: 'a.b', resource: { type: 't', id: 'i' } }],
    ['action', { actor: { id: 'a' }, resource: { type: 't', id: 'i' } }],
    ['resource.type', { actor: { id: 'a' }, action: 'a.b', resource: { id: 'i' } }],
    ['resource.id', { actor: { id: 'a' }, action: 'a.b', resource: { type: 't' } }],
    ['resource', { actor: { id: 'a' }, action: 'a.b' }],
    ['everything', {}],
    ['empty action', { ...full, action: '' }],
  ])('%s absent → 400 Missing required fields', async (_what, body) => {
    const res = await call(events, { key: org.key, body });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ message: 'Missing required fields', code: 'MISSING_REQUIRED_FIELDS' });
  });

  test('missing fields win over other problems and are named', async () => {
    const res = await call(events, { key: org.key, body: { actor: { id: 5 }, resource: { type: 't' }, timestamp: 'nope' } });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('Missing required fields');
    expect(res.body.fields).toEqual(expect.arrayContaining(['action', 'resource.id']));
  });
});

describe('invalid input gets a 400 that names the problem', () => {
  test.each([
    ['actor.id is a number', { actor: { id: 42 } }, 'actor.id', 'actor.id must be a string'],
    ['action is an object', { action: { $ne: 1 } }, 'action', 'action must be a string'],
    ['metadata is an array', { metadata: [1, 2] }, 'metadata', 'metadata must be a JSON object'],
    ['metadata is a string', { metadata: 'x' }, 'metadata', 'metadata must be a JSON object'],
    ['timestamp is a number', { timestamp: 1700000000 }, 'timestamp', 'timestamp must be an ISO 8601 datetime string'],
    ['timestamp is impossible', { timestamp: '2024-02-30T10:00:00Z' }, 'timestamp', 'timestamp must be a valid ISO 8601 datetime with a UTC designator or offset, e.g. 2024-01-15T10:30:00.000Z'],
    ['timestamp hour 24', { timestamp: '2024-01-01T24:00:00Z' }, 'timestamp', 'timestamp must be a valid ISO 8601 datetime with a UTC designator or offset, e.g. 2024-01-15T10:30:00.000Z'],
    ['timestamp has no zone', { timestamp: '2024-01-01T10:00:00' }, 'timestamp', 'timestamp must be a valid ISO 8601 datetime with a UTC designator or offset, e.g. 2024-01-15T10:30:00.000Z'],
    ['timestamp is a date only', { timestamp: '2024-01-01' }, 'timestamp', 'timestamp must be a valid ISO 8601 datetime with a UTC designator or offset, e.g. 2024-01-15T10:30:00.000Z'],
    ['timestamp is prose', { timestamp: 'yesterday' }, 'timestamp', 'timestamp must be a valid ISO 8601 datetime with a UTC designator or offset, e.g. 2024-01-15T10:30:00.000Z'],
    ['organization_id is empty', { organization_id: '' }, 'organization_id', 'organization_id must not be empty'],
    ['actor.id is too long', { actor: { id: 'x'.repeat(257) } }, 'actor.id', 'actor.id must be at most 256 characters'],
    ['resource.name is too long', { resource: { type: 't', id: 'i', name: 'n'.repeat(1025) } }, 'resource.name', 'resource.name must be at most 1024 characters'],
    ['actor.email is too long', { actor: { id: 'a', email: `${'e'.repeat(320)}@x` } }, 'actor.email', 'actor.email must be at most 320 characters'],
    ['an unknown top-level field', { actor_id: 'oops' }, 'actor_id', 'actor_id is not a known field'],
  ])('%s', async (_what, override, field, clause) => {
    const res = await call(events, { key: org.key, body: eventBody(override) });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { code: 'VALIDATION_FAILED', message: `Invalid request: ${clause}`, fields: [field] } });
  });

  test.each([
    ['malformed JSON', '{"actor": {"id": "a"', 'MALFORMED_JSON', /not valid JSON/],
    ['a JSON array', '[{"actor":{"id":"a"}}]', 'VALIDATION_FAILED', /must be a JSON object/],
    ['a JSON string', '"hello"', 'VALIDATION_FAILED', /must be a JSON object/],
    ['JSON null', 'null', 'VALIDATION_FAILED', /must be a JSON object/],
    ['an empty body', '', 'VALIDATION_FAILED', /must be a JSON object/],
  ])('%s → 400', async (_what, rawBody, code, message) => {
    const res = await call(events, { key: org.key, rawBody });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(code);
    expect(res.body.message).toMatch(message);
  });

  test('a body over 1 MiB → 413, and nothing is stored', async () => {
    const before = await app.collections.events.countDocuments({ tenant: org.id });
    const res = await call(events, { key: org.key, body: eventBody({ metadata: { blob: 'x'.repeat(1024 * 1024) } }) });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ message: 'Request body exceeds the 1 MiB limit', code: 'PAYLOAD_TOO_LARGE' });
    expect(await app.collections.events.countDocuments({ tenant: org.id })).toBe(before);
  });

  test('a body just under 1 MiB is parsed (whitespace counts), and metadata of exactly 64 KiB is accepted', async () => {
    // {"blob":"…"} is 11 bytes of JSON around the string.
    const metadata = { blob: 'x'.repeat(64 * 1024 - 11) };
    const body = JSON.stringify(eventBody({ metadata })).replace('{', `{${' '.repeat(1000 * 1000 - 70 * 1024)}`);
    const res = await call(events, { key: org.key, rawBody: body });
    expect(res.status).toBe(201);
    expect(res.body.event.metadata).toEqual(metadata);
  });

  test('metadata over 64 KiB as JSON → 400 naming metadata, and nothing is stored', async () => {
    const before = await app.collections.events.countDocuments({ tenant: org.id });
    const res = await call(events, { key: org.key, body: eventBody({ metadata: { blob: 'x'.repeat(64 * 1024 - 10) } }) });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message: 'Invalid request: metadata must be at most 65536 bytes as JSON', code: 'VALIDATION_FAILED', fields: ['metadata'] });
    expect(await app.collections.events.countDocuments({ tenant: org.id })).toBe(before);
  });

  test('a compressed body: decompressed as its Content-Encoding says; bytes that are not what it says → 400, an unknown encoding → 415; nothing stored', async () => {
    const post = (encoding: string, bytes: Uint8Array) =>
      fetch(events, { method: 'POST', headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json', 'content-encoding': encoding }, body: new Uint8Array(bytes) });
    const gzipped = await post('gzip', gzipSync(JSON.stringify(eventBody({ actor: { id: 'gzipped' } }))));
    expect(gzipped.status).toBe(201);
    expect(((await gzipped.json()) as { event: { actor_id: string } }).event.actor_id).toBe('gzipped');
    const before = await app.collections.events.countDocuments({ tenant: org.id });
    // Each of these answered 500 (zlib's error, which carries no HTTP status) before.
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const res = await post(encoding, Buffer.from(JSON.stringify(eventBody())));
      expect({ encoding, status: res.status }).toEqual({ encoding, status: 400 });
      const body = (await res.json()) as { code: string; message: string };
      expect(body.code).toBe('MALFORMED_JSON');
      expect(body.message).toMatch(new RegExp(`^Request body could not be decompressed as its Content-Encoding \\(${encoding}\\) says: `));
    }
    const truncated = await post('gzip', gzipSync(JSON.stringify(eventBody())).subarray(0, 20));
    expect(truncated.status).toBe(400);
    const unknown = await post('x-unknown', Buffer.from(JSON.stringify(eventBody())));
    expect(unknown.status).toBe(415);
    expect(await app.collections.events.countDocuments({ tenant: org.id })).toBe(before);
  });

  test('a non-JSON content type → 415', async () => {
    const res = await call(events, { key: org.key, rawBody: 'actor=a', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ message: 'Content-Type must be application/json', code: 'UNSUPPORTED_MEDIA_TYPE' });
  });
});
