/**
 * How /v1 reads a request body (src/http/jsonBody.ts): a body that has all arrived is taken from the
 * request's buffer (`bodyAtHand`), any other through co-body. Both must give the same text for the same
 * bytes, and a body that arrives late, in pieces or compressed must still be read whole.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import coBody from 'co-body';
import fc from 'fast-check';
import { bodyAtHand, readJsonObject } from '../../src/http/jsonBody';
import { eventBody } from '../helpers/api';
import type { ParameterizedContext } from 'koa';
import type { AppState } from '../../src/http/appState';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { pace } from '../helpers/waiting';

/** What co-body reads from the same bytes: the text the service read before bodyAtHand existed. */
function coBodyText(bytes: Buffer, limit: number): Promise<string> {
  const stream = Object.assign(Readable.from(bytes.length ? [bytes] : []), { headers: { 'content-length': String(bytes.length) } });
  return coBody.text(stream as unknown as IncomingMessage, { limit, encoding: 'utf8' }) as Promise<string>;
}

/** Sends one request over a fresh connection, in the pieces given (each its own write, `gapMs` apart); resolves with the raw answer. */
async function rawRequest(port: number, pieces: (string | Buffer)[], gapMs = 0): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let answer = '';
  socket.setEncoding('latin1');
  const answered = new Promise<void>((resolve) => {
    socket.on('data', (chunk: string) => {
      answer += chunk;
      const end = answer.indexOf('\r\n\r\n');
      if (end >= 0 && answer.length >= end + 4 + Number(/content-length: (\d+)/i.exec(answer)?.[1] ?? 0)) resolve();
    });
  });
  for (const [i, piece] of pieces.entries()) {
    if (i > 0 && gapMs > 0) await pace(gapMs, 'each piece of the request in a read of its own: the body still arriving when the request begins');
    socket.write(piece);
  }
  await answered;
  socket.destroy();
  return answer;
}

function head(path: string, length: number, extra = ''): string {
  return `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;
}

describe('a body taken from the buffer', () => {
  let server: Server;
  let port: number;
  /** What the last request's handler found: the text at hand, or null. */
  let found: string | null | undefined;
  const LIMIT = 1000;

  beforeAll(async () => {
    server = createServer((req, res) => {
      // As the service's middleware does: a turn of the microtask queue after the request began.
      void Promise.resolve().then(() => {
        found = bodyAtHand(req, LIMIT);
        res.end('{}');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('is the text co-body reads from the same bytes: any bytes, a byte order mark, broken UTF-8', async () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 300 }),
      fc.string({ maxLength: 100 }).map((s) => new Uint8Array(Buffer.from(s, 'utf8'))),
      fc.tuple(fc.constantFrom([0xef, 0xbb, 0xbf], [0xef, 0xbb], [0xfe, 0xff], [0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf]), fc.uint8Array({ maxLength: 40 })).map(([bom, rest]) => new Uint8Array([...bom, ...rest])),
    );
    await fc.assert(
      fc.asyncProperty(bytes, async (array) => {
        const body = Buffer.from(array);
        found = undefined;
        await rawRequest(port, [Buffer.concat([Buffer.from(head('/', body.length), 'latin1'), body])]);
        expect(found).toBe(await coBodyText(body, LIMIT));
      }),
      { numRuns: 200 },
    );
  });

  test('is not taken when the body is still arriving, larger than the limit, or compressed', async () => {
    found = undefined;
    await rawRequest(port, [head('/', 10), '{"a":', '"bc"}'], 100);
    expect(found).toBeNull();

    found = undefined;
    const large = `"${'x'.repeat(LIMIT)}"`;
    await rawRequest(port, [head('/', large.length) + large]);
    expect(found).toBeNull();

    found = undefined;
    const gzipped = gzipSync('{"a":1}');
    await rawRequest(port, [Buffer.concat([Buffer.from(head('/', gzipped.length, 'Content-Encoding: gzip\r\n'), 'latin1'), gzipped])]);
    expect(found).toBeNull();

    // Identity is no coding, whatever its case: taken.
    found = undefined;
    await rawRequest(port, [head('/', 7, 'Content-Encoding: Identity\r\n') + '{"a":1}']);
    expect(found).toBe('{"a":1}');
  });
});

test('readJsonObject takes a body that came with its headers from the buffer, and reads one still arriving through co-body', async () => {
  const read = jest.spyOn(coBody, 'text');
  const results: { value: unknown; throughCoBody: boolean }[] = [];
  const server = createServer((req, res) => {
    const ctx = { req, get: (name: string) => req.headers[name.toLowerCase()] ?? '', is: () => 'application/json', set: () => undefined } as unknown as ParameterizedContext<AppState>;
    const calls = read.mock.calls.length;
    void readJsonObject(ctx, 1000).then((value) => {
      results.push({ value, throughCoBody: read.mock.calls.length > calls });
      res.end('{}');
    });
  });
  try {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    await rawRequest(port, [head('/', 7) + '{"a":1}']);
    await rawRequest(port, [head('/', 7), '{"a":', '1}'], 100);
    expect(results).toEqual([{ value: { a: 1 }, throughCoBody: false }, { value: { a: 1 }, throughCoBody: true }]);
  } finally {
    read.mockRestore();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

describe('POST /v1/events, however its body arrives', () => {
  let app: TestApp;
  let org: TestOrg;
  let port: number;

  beforeAll(async () => {
    app = await startTestApp({ label: 'body-reading' });
    org = await app.org();
    port = Number(new URL(app.url).port);
  });
  afterAll(() => app.close());

  const post = (body: Buffer, extra = ''): string => head('/v1/events', body.length, `Authorization: Bearer ${org.key}\r\n${extra}`);

  test('with its headers, in pieces a moment apart, with a byte order mark, or gzipped: stored the same', async () => {
    const json = Buffer.from(JSON.stringify(eventBody({ action: 'body.read' })));
    const whole = await rawRequest(port, [Buffer.concat([Buffer.from(post(json), 'latin1'), json])]);
    const pieces = await rawRequest(port, [post(json), json.subarray(0, 20), json.subarray(20)], 50);
    const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json]);
    const bom = await rawRequest(port, [Buffer.concat([Buffer.from(post(withBom), 'latin1'), withBom])]);
    const gzipped = gzipSync(json);
    const gzip = await rawRequest(port, [Buffer.concat([Buffer.from(post(gzipped, 'Content-Encoding: gzip\r\n'), 'latin1'), gzipped])]);
    for (const answer of [whole, pieces, bom, gzip]) {
      expect(answer).toMatch(/^HTTP\/1\.1 201 /);
      const event = (JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { event: { action: string; actor_id: string } }).event;
      expect(event).toMatchObject({ action: 'body.read', actor_id: 'user_123' });
    }
  });

  test('too large for its limit, or not JSON: the same refusals as before', async () => {
    const json = Buffer.from(JSON.stringify(eventBody({ metadata: { big: 'x'.repeat(1024 * 1024) } })));
    const tooLarge = await rawRequest(port, [Buffer.concat([Buffer.from(post(json), 'latin1'), json])]);
    expect(tooLarge).toMatch(/^HTTP\/1\.1 413 /);
    expect(tooLarge).toContain('Request body exceeds the 1 MiB limit');

    const broken = Buffer.from('{"actor":');
    const malformed = await rawRequest(port, [Buffer.concat([Buffer.from(post(broken), 'latin1'), broken])]);
    expect(malformed).toMatch(/^HTTP\/1\.1 400 /);
    expect(malformed).toContain('MALFORMED_JSON');
  });
});
