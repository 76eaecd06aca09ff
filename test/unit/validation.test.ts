/**
 * The one mapping from zod issues to words (src/domain/validation.ts): each issue code gives one clause
 * that starts with the field's name, and the 400 joins them after "Invalid request: ". The issues come
 * from real schemas, so a zod upgrade that changes what it reports shows here.
 */
import { TRPCClientError } from '@trpc/client';
import { z } from 'zod';
import { ZSignupInput } from '../../src/domain/account';
import { ZCreateEventInput, ZExportEventsInput, ZListEventsInput } from '../../src/domain/event';
import { ZEraseInput, ZSetPolicyInput } from '../../src/domain/retention';
import { ZInvitationToken } from '../../src/domain/roles';
import { ZCreateStreamInput } from '../../src/domain/stream';
import { unknownFieldsError, validationError } from '../../src/domain/validation';
import { RetentionService } from '../../src/services/retention';
import { errorMessage } from '../../src/dashboard/lib/trpc';

/** The 400 a value failing `schema` gets: its code, message and fields. */
function answer(schema: z.ZodType, value: unknown): { code: string; message: string; fields: string[] | undefined } {
  const parsed = schema.safeParse(value);
  if (parsed.success) throw new Error(`expected ${JSON.stringify(value)} to be refused`);
  const error = validationError(parsed.error.issues);
  return { code: error.code, message: error.message, fields: error.details.fields };
}

const message = (schema: z.ZodType, value: unknown) => answer(schema, value).message;

describe('each issue code is one clause naming its field', () => {
  const sized = z.strictObject({
    password: z.string().min(12).max(256).optional(),
    name: z.string().min(1).optional(),
    code: z.string().length(6).optional(),
    days: z.number().int().min(30).optional(),
    limit: z.number().max(1000).optional(),
    count: z.number().positive().optional(),
    offset: z.number().min(0).optional(),
    ratio: z.number().lt(1).optional(),
    scopes: z.array(z.string()).min(1).max(3).optional(),
    pair: z.array(z.string()).min(2).optional(),
    step: z.number().multipleOf(5).optional(),
  });

  test.each([
    ['too_small, string', { password: 'short' }, 'password must be at least 12 characters'],
    ['too_big, string', { password: 'x'.repeat(257) }, 'password must be at most 256 characters'],
    ['too_small, string of at least 1', { name: '' }, 'name must not be empty'],
    ['too_small, exact string length', { code: '12345' }, 'code must be exactly 6 characters'],
    ['too_small, number', { days: 29 }, 'days must be at least 30'],
    ['too_big, number', { limit: 1001 }, 'limit must be at most 1000'],
    ['too_small, number above 0', { count: 0 }, 'count must be greater than 0'],
    ['too_small, number from 0', { offset: -1 }, 'offset must not be negative'],
    ['too_big, number below a bound', { ratio: 1 }, 'ratio must be less than 1'],
    ['too_small, array of at least 1', { scopes: [] }, 'scopes must not be empty'],
    ['too_big, array', { scopes: ['a', 'b', 'c', 'd'] }, 'scopes must have at most 3 items'],
    ['too_small, array', { pair: ['a'] }, 'pair must have at least 2 items'],
    ['invalid_type, int', { days: 30.5 }, 'days must be a whole number'],
    ['invalid_type, number', { days: '30' }, 'days must be a number'],
    ['invalid_type, string', { name: 7 }, 'name must be a string'],
    ['invalid_type, array', { scopes: 'a' }, 'scopes must be an array'],
    ['not_multiple_of', { step: 7 }, 'step must be a multiple of 5'],
  ])('%s', (_code, value, clause) => {
    expect(message(sized, value)).toBe(`Invalid request: ${clause}`);
  });

  const formats = z.strictObject({
    email: z.email().optional(),
    url: z.url().optional(),
    id: z.uuid().optional(),
    at: z.iso.datetime().optional(),
    day: z.iso.date().optional(),
    prefix: z.string().startsWith('als_').optional(),
    flag: z.boolean().optional(),
    actor: z.strictObject({ id: z.string() }).optional(),
    format: z.enum(['json', 'csv']).optional(),
    role: z.enum(['owner', 'admin', 'member']).optional(),
    type: z.literal('webhook').optional(),
  });

  test.each([
    ['invalid_format, email', { email: 'nope' }, 'email must be a valid email address'],
    ['invalid_format, url', { url: 'not a url' }, 'url must be a valid URL'],
    ['invalid_format, uuid', { id: '42' }, 'id must be a valid UUID'],
    ['invalid_format, datetime', { at: 'yesterday' }, 'at must be an ISO 8601 datetime, e.g. 2024-01-15T10:30:00Z'],
    ['invalid_format, date', { day: '15/01/2024' }, 'day must be a date (YYYY-MM-DD)'],
    ['invalid_format, starts_with', { prefix: 'key' }, 'prefix must start with "als_"'],
    ['invalid_type, boolean', { flag: 'yes' }, 'flag must be true or false'],
    ['invalid_type, object', { actor: 'a' }, 'actor must be a JSON object'],
    ['invalid_type, missing', { actor: {} }, 'actor.id is required'],
    ['invalid_value, enum of two', { format: 'xml' }, 'format must be json or csv'],
    ['invalid_value, enum of three', { role: 'boss' }, 'role must be owner, admin or member'],
    ['invalid_value, literal', { type: 'email' }, 'type must be webhook'],
    ['unrecognized_keys, nested', { actor: { id: 'a', nick: 'b' } }, 'actor.nick is not a known field'],
    ['unrecognized_keys, several', { colour: 'red', size: 'L' }, 'colour and size are not known fields'],
  ])('%s', (_code, value, clause) => {
    expect(message(formats, value)).toBe(`Invalid request: ${clause}`);
  });

  test('invalid_union of a discriminated union names its discriminator and its values', () => {
    expect(answer(ZCreateStreamInput, { name: 's', destination: { type: 'ftp' } })).toEqual({
      code: 'VALIDATION_FAILED',
      message: 'Invalid request: destination.type must be webhook, splunk, datadog or s3',
      fields: ['destination.type'],
    });
  });

  test('custom: a refinement\'s own clause follows its field', () => {
    expect(message(ZEraseInput, { reason: 'legal_obligation' })).toBe('Invalid request: actor_id must be given, or event_ids instead (not both)');
    expect(message(ZCreateEventInput, { actor: { id: 'a' }, action: 'audit_ledger.x', resource: { type: 't', id: 'i' } }))
      .toBe('Invalid request: action must not start with "audit_ledger.": that namespace is the service\'s own records');
  });

  test('a pattern\'s own clause (zod cannot know what a regex means)', () => {
    expect(answer(z.strictObject({ token: ZInvitationToken }), { token: 'ali_short' })).toEqual({
      code: 'VALIDATION_FAILED', message: 'Invalid request: token is not a valid invitation link', fields: ['token'],
    });
  });

  test('a problem with the input as a whole is said of the request body', () => {
    expect(message(ZSignupInput, 'hello')).toBe('Invalid request: the request body must be a JSON object');
    expect(message(ZSignupInput, undefined)).toBe('Invalid request: the request body must be a JSON object');
  });

  test('unknown parameters, as the REST layer finds them', () => {
    const error = unknownFieldsError(['colour']);
    expect({ code: error.code, message: error.message, fields: error.details.fields }).toEqual({
      code: 'VALIDATION_FAILED', message: 'Invalid request: colour is not a known field', fields: ['colour'],
    });
  });

  test('countless or huge unknown keys get a small answer: five named, each cut at 64 characters, the rest counted', () => {
    const keys = ['k'.repeat(10_000), ...Array.from({ length: 9_999 }, (_, i) => `extra${i}`)];
    const error = unknownFieldsError(keys);
    expect(error.message).toBe(`Invalid request: ${'k'.repeat(64)}…, extra0, extra1, extra2, extra3 and 9995 others are not known fields`);
    expect(error.details.fields).toHaveLength(20);
    expect(error.details.fields?.[0]).toBe(`${'k'.repeat(64)}…`);
  });
});

describe('the schemas people meet', () => {
  test('sign-up: each field\'s problem once, no field named twice', () => {
    expect(answer(ZSignupInput, { email: 'nope', password: 'short', organization_name: '  ' })).toEqual({
      code: 'VALIDATION_FAILED',
      message: 'Invalid request: email must be a valid email address; password must be at least 12 characters; organization_name must not be empty',
      fields: ['email', 'password', 'organization_name'],
    });
    expect(message(ZSignupInput, { email: 'a@example.com', password: 'x'.repeat(12), organization_name: 'o'.repeat(101) }))
      .toBe('Invalid request: organization_name must be at most 100 characters');
  });

  test('retention policy days', () => {
    expect(message(ZSetPolicyInput, { days: 0 })).toBe('Invalid request: days must be greater than 0');
    expect(message(ZSetPolicyInput, { days: 1.5 })).toBe('Invalid request: days must be a whole number');
    expect(message(ZSetPolicyInput, {})).toBe('Invalid request: days is required');
  });

  test('list and export parameters', () => {
    expect(message(ZListEventsInput, { limit: 0 })).toBe('Invalid request: limit must be at least 1');
    expect(message(ZListEventsInput, { limit: 1001 })).toBe('Invalid request: limit must be at most 1000');
    expect(message(ZListEventsInput, { limit: 2.5 })).toBe('Invalid request: limit must be a whole number');
    expect(message(ZListEventsInput, { actor_id: ['a', 'b'] })).toBe('Invalid request: actor_id must be a single string');
    // A schema's words for a wrong type are for that only: its bounds are still worded here.
    expect(message(ZListEventsInput, { actor_id: '' })).toBe('Invalid request: actor_id must not be empty');
    expect(message(ZListEventsInput, { actor_id: 'a'.repeat(257) })).toBe('Invalid request: actor_id must be at most 256 characters');
    expect(message(ZExportEventsInput, { format: 'xml' })).toBe('Invalid request: format must be json or csv');
  });

  test('more than three problems: three spelled out, the rest counted', () => {
    expect(message(ZSignupInput, { email: 1, password: 2, organization_name: 3, extra: 4 }))
      .toBe('Invalid request: email must be a string; password must be a string; organization_name must be a string (and 1 more)');
  });

  test('the contract\'s message for missing required event fields is unchanged', () => {
    expect(answer(ZCreateEventInput, { actor: { id: '' }, resource: { type: 't' } })).toEqual({
      code: 'MISSING_REQUIRED_FIELDS', message: 'Missing required fields', fields: ['actor.id', 'action', 'resource.id'],
    });
  });

  test('a wrong type of a required event field is worded, not taken for a missing one', () => {
    expect(answer(ZCreateEventInput, { actor: { id: 42 }, action: 'a', resource: { type: 't', id: 'i' } })).toEqual({
      code: 'VALIDATION_FAILED', message: 'Invalid request: actor.id must be a string', fields: ['actor.id'],
    });
    expect(message(ZCreateEventInput, { actor: 'a', action: 'a', resource: { type: 't', id: 'i' } })).toBe('Invalid request: actor must be a JSON object');
  });
});

describe('hand-written messages: the retention policy\'s bounds of this installation', () => {
  /** The service with only its bounds: the days are checked before anything is read or written. */
  const policy = (minDays: number, maxDays: number | null) => (days: number | null) =>
    new RetentionService({ options: { minDays, maxDays, noticeDays: 7 } } as unknown as ConstructorParameters<typeof RetentionService>[0])
      .setPolicy({} as never, days);

  test.each([
    [30, 3650, 5, 'Invalid request: days must be a whole number between 30 and 3650'],
    [30, 3650, 4000, 'Invalid request: days must be a whole number between 30 and 3650'],
    [30, null, 5, 'Invalid request: days must be at least 30'],
    [30, 3650, null, 'Invalid request: this installation keeps events for at most 3650 days, so choose a number of days'],
  ])('min %i, max %p, days %p → %s', async (min, max, days, text) => {
    await expect(policy(min, max)(days)).rejects.toMatchObject({ code: 'VALIDATION_FAILED', message: text, details: { fields: ['days'] } });
  });
});

describe('the dashboard shows the server\'s sentence for a person', () => {
  const failure = (text: string, data: Record<string, unknown>) => new TRPCClientError(text, { result: { error: { message: text, code: -32600, data } } });

  test.each([
    ['Invalid request: password must be at least 12 characters', ['password'], 'Password must be at least 12 characters.'],
    ['Invalid request: email must be a valid email address', ['email'], 'Email must be a valid email address.'],
    ['Invalid request: organization_name must not be empty', ['organization_name'], 'Organization name must not be empty.'],
    ['Invalid request: start_date must not be after end_date', ['start_date', 'end_date'], 'Start date must not be after end date.'],
    ['Invalid request: days must be a whole number between 30 and 3650', ['days'], 'Days must be a whole number between 30 and 3650.'],
    ['An account with this email already exists. Log in instead.', undefined, 'An account with this email already exists. Log in instead.'],
    ['Invalid email or password', undefined, 'Invalid email or password.'],
  ])('%s', (text, fields, shown) => {
    expect(errorMessage(failure(text, { httpStatus: 400, appCode: 'VALIDATION_FAILED', fields }))).toBe(shown);
  });

  test('a failure with no answer from the server says what to do', () => {
    expect(errorMessage(new TypeError('Failed to fetch'))).toBe('Could not reach Audit Ledger. Check your connection and try again.');
  });
});
