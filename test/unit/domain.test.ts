/** Pure functions of the domain: time parsing, cursors, CSV cells, configuration, API keys' hashes. */
import { createHash } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import { z, type ZodError } from 'zod';
import { loadConfig } from '../../src/config/env';
import { toAppError } from '../../src/trpc/errors';
import { bearerToken, hashApiKey } from '../../src/domain/apiKey';
import { decodeCursor, encodeCursor } from '../../src/domain/cursor';
import { parseIsoDateTime, parseRangeBound, utcMonth } from '../../src/domain/time';
import { formatCsvCell } from '../../src/export/csvCell';

describe('parseIsoDateTime', () => {
  test.each([
    ['2024-01-15T10:30:00Z', '2024-01-15T10:30:00.000Z'],
    ['2024-01-15T10:30:00.1Z', '2024-01-15T10:30:00.100Z'],
    ['2024-01-15T10:30:00.999999999Z', '2024-01-15T10:30:00.999Z'],
    ['2024-01-15T00:30:00+0100', '2024-01-14T23:30:00.000Z'],
    ['2023-12-31T23:00:00-01:00', '2024-01-01T00:00:00.000Z'],
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
  ])('%s → %s', (text, iso) => {
    expect(parseIsoDateTime(text)?.toISOString()).toBe(iso);
  });

  test.each([
    '2024-02-30T10:00:00Z',
    '2023-02-29T10:00:00Z',
    '2024-04-31T00:00:00Z',
    '2024-00-10T00:00:00Z',
    '2024-01-15T10:60:00Z',
    '2024-01-15T10:30:60Z',
    '2024-01-15T10:30:00',
    '2024-01-15 10:30:00Z',
    '2024-01-15T10:30:00+24:00',
    '0001-01-01T00:00:00+01:00',
    '9999-12-31T23:59:59-01:00',
    ' 2024-01-15T10:30:00Z',
    '',
  ])('rejects %j', (text) => {
    expect(parseIsoDateTime(text)).toBeNull();
  });
});

test('range bounds: a date-only end covers its whole UTC day', () => {
  expect(parseRangeBound('2024-02-29', 'start')?.toISOString()).toBe('2024-02-29T00:00:00.000Z');
  expect(parseRangeBound('2024-02-29', 'end')?.toISOString()).toBe('2024-02-29T23:59:59.999Z');
  expect(parseRangeBound('2024-02-29T12:00:00Z', 'end')?.toISOString()).toBe('2024-02-29T12:00:00.000Z');
  expect(parseRangeBound('2023-02-29', 'end')).toBeNull();
});

test('utcMonth is the UTC calendar month', () => {
  expect(utcMonth(new Date('2024-01-31T23:59:59.999Z'))).toBe('2024-01');
  expect(utcMonth(new Date('2024-02-01T00:00:00+01:00'))).toBe('2024-01');
});

test('cursors round-trip and garbage is a 400', () => {
  const position = { timestamp: new Date('2024-01-01T00:00:00.123Z'), id: '0190c8e4-0000-7000-8000-000000000000' };
  expect(decodeCursor(encodeCursor(position))).toEqual(position);
  for (const bad of ['', 'abc', Buffer.from('{"t":"x","i":1}').toString('base64url'), Buffer.from('[]').toString('base64url')]) {
    expect(() => decodeCursor(bad)).toThrow(expect.objectContaining({ code: 'INVALID_CURSOR', status: 400 }));
  }
});

test.each([
  ['plain', 'plain'],
  ['a,b', '"a,b"'],
  ['say "hi"', '"say ""hi"""'],
  ['two\nlines', '"two\nlines"'],
  ['=1+1', "'=1+1"],
  ['+1', "'+1"],
  ['-1', "'-1"],
  ['@SUM(A1)', "'@SUM(A1)"],
  ['\tx', "'\tx"],
  ['\rx', '"\'\rx"'],
  ['=HYPERLINK("a","b")', '"\'=HYPERLINK(""a"",""b"")"'],
  ['a=b', 'a=b'],
])('CSV cell %j → %j', (value, cell) => {
  expect(formatCsvCell(value)).toBe(cell);
});

describe('configuration', () => {
  test('defaults: port 3000, free plan 10,000 events a month, embedded database', () => {
    const config = loadConfig({});
    expect(config.port).toBe(3000);
    expect(config.planCaps.free).toBe(10_000);
    expect(config.mongodbUri).toBeUndefined();
  });

  test('plan caps are configurable', () => {
    expect(loadConfig({ PLAN_CAP_PRO: '250000' }).planCaps.pro).toBe(250_000);
  });

  test('LOG_LEVEL: the service logs info and the CLI warn unless it is set; MONGOMS_VERSION pins the embedded MongoDB', () => {
    expect(loadConfig({})).toMatchObject({ logLevel: 'info', cliLogLevel: 'warn', embeddedMongoVersion: '7.0.14' });
    expect(loadConfig({ LOG_LEVEL: 'debug', MONGOMS_VERSION: '8.0.4' })).toMatchObject({ logLevel: 'debug', cliLogLevel: 'debug', embeddedMongoVersion: '8.0.4' });
    expect(() => loadConfig({ MONGOMS_VERSION: 'newest' })).toThrow(/MONGOMS_VERSION: must be a MongoDB version/);
  });

  test('bad values stop start-up with a message naming each variable', () => {
    expect(() => loadConfig({ PORT: 'eighty', MONGODB_URI: 'postgres://x', LOG_LEVEL: 'loud' })).toThrow(/PORT[\s\S]*MONGODB_URI[\s\S]*LOG_LEVEL/);
  });
});

test('a schema refusing the input is the client\'s 400; refusing the output is the service\'s 500', () => {
  const issues = z.object({ days: z.number() }).safeParse({}).error as ZodError;
  expect(toAppError(new TRPCError({ code: 'BAD_REQUEST', cause: issues })).code).toBe('VALIDATION_FAILED');
  expect(toAppError(new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: 'Output validation failed', cause: issues })).code).toBe('INTERNAL_ERROR');
});

describe('hashApiKey', () => {
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

  test('the SHA-256 of what it is given, the first time and from its memo, for keys and for anything else', () => {
    const key = `alk_${'A'.repeat(43)}`;
    // A key cut out of a long header (as bearerToken gives it) is the same key.
    const cut = bearerToken(`Bearer ${' '.repeat(5000)}${key}`) as string;
    for (const text of [key, key, cut, 'not a key', 'not a key', 'Ā', '\u0000', '\ud800']) expect(hashApiKey(text)).toBe(sha256(text));
  });
});
