/**
 * The one place where a zod issue becomes words: each issue is one clause that starts with the field's
 * name ("password must be at least 12 characters"), and the service's 400 joins them after
 * "Invalid request: ". Schemas therefore set no messages of their own for what this file words from the
 * issue (lengths, bounds, types, formats, choices); they set one only where zod cannot know the meaning
 * (a refinement, a pattern), as a clause that starts in lower case and completes the sentence after the
 * field's name: `.regex(TOKEN, 'is not a valid invitation link')`. Zod's own messages start with a
 * capital, which is how the two are told apart.
 */
import type { z } from 'zod';
import { AppError, MESSAGES } from './errors';
import { REQUIRED } from './event';

type Issue = z.core.$ZodIssue;

/**
 * The most fields one error names. A body of millions of invalid items must get a small answer: the
 * first few are named, `fields_total` says how many there were.
 */
export const MAX_LISTED_FIELDS = 20;

/** The most problems one message spells out; the rest are counted. */
const MAX_SPELLED_OUT = 3;

/** The most unknown keys one clause names, and the longest name it repeats whole. */
const MAX_KEYS_NAMED = 5;
const MAX_NAME_CHARS = 64;

function shortened(name: string): string {
  return name.length > MAX_NAME_CHARS ? `${name.slice(0, MAX_NAME_CHARS)}…` : name;
}

/** The subject of a problem with the input as a whole (a path of no parts). */
const WHOLE_INPUT = 'the request body';

/** The first MAX_LISTED_FIELDS of `fields`, and their total when some were left out. */
export function bounded(fields: string[]): { fields: string[]; fieldsTotal?: number } {
  const listed = fields.slice(0, MAX_LISTED_FIELDS).map(shortened);
  return fields.length > MAX_LISTED_FIELDS ? { fields: listed, fieldsTotal: fields.length } : { fields: listed };
}

/** `events[3].actor.id`: names with dots, array positions in brackets. */
function dotted(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part)), '');
}

/** "a", "a or b", "a, b or c" (or "and"). */
function listed(words: readonly string[], last: 'or' | 'and'): string {
  return words.length < 2 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} ${last} ${words[words.length - 1]}`;
}

/** An allowed value as a person reads it: plain words bare, anything else as JSON. */
function valueWords(value: unknown): string {
  if (typeof value !== 'string') return String(value);
  return /^[\w.:/-]+$/.test(value) ? value : JSON.stringify(value);
}

function counted(count: number | bigint, unit: string): string {
  return `${String(count)} ${unit}${count === 1 || count === 1n ? '' : 's'}`;
}

/** What "at least N" counts for a sized value; numbers and dates have no unit. */
const UNITS: Partial<Record<string, string>> = { string: 'character', array: 'item', set: 'item', file: 'byte' };

const TYPES: Partial<Record<string, string>> = {
  int: 'a whole number',
  number: 'a number',
  bigint: 'a whole number',
  nan: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'a JSON object',
  record: 'a JSON object',
  array: 'an array',
  tuple: 'an array',
  date: 'a date',
  null: 'null',
};

const FORMATS: Partial<Record<string, string>> = {
  email: 'a valid email address',
  url: 'a valid URL',
  uuid: 'a valid UUID',
  guid: 'a valid UUID',
  datetime: 'an ISO 8601 datetime, e.g. 2024-01-15T10:30:00Z',
  date: 'a date (YYYY-MM-DD)',
  time: 'a time (HH:MM:SS)',
  duration: 'an ISO 8601 duration',
  ipv4: 'an IPv4 address',
  ipv6: 'an IPv6 address',
  base64: 'base64 text',
  base64url: 'base64url text',
  jwt: 'a valid JWT',
  lowercase: 'in lower case',
  uppercase: 'in upper case',
};

/** A bound of a sized value (length, item count) or of a number or date. */
function bound(issue: Extract<Issue, { code: 'too_small' | 'too_big' }>): string {
  const small = issue.code === 'too_small';
  const limit = small ? issue.minimum : issue.maximum;
  const unit = UNITS[issue.origin];
  if (unit) {
    if (small && !issue.exact && Number(limit) === 1 && issue.inclusive !== false) return 'must not be empty';
    const words = issue.exact ? 'exactly' : small ? 'at least' : 'at most';
    return `must ${unit === 'character' || unit === 'byte' ? 'be' : 'have'} ${words} ${counted(limit, unit)}`;
  }
  const shown = issue.origin === 'date' ? new Date(Number(limit)).toISOString() : String(limit);
  if (issue.origin === 'date') return small ? `must not be before ${shown}` : `must not be after ${shown}`;
  if (issue.exact) return `must be ${shown}`;
  if (small && Number(limit) === 0 && issue.inclusive !== false) return 'must not be negative';
  if (issue.inclusive === false) return small ? `must be greater than ${shown}` : `must be less than ${shown}`;
  return small ? `must be at least ${shown}` : `must be at most ${shown}`;
}

/** Zod words a missing value as a wrong type; its message is the one trace of the input it keeps. */
function isMissing(issue: Issue): boolean {
  return issue.code === 'invalid_type' && (issue.expected === 'nonoptional' || issue.message.endsWith('received undefined'));
}

/** What is wrong, as the rest of a sentence that starts with the field's name. */
function problemOf(issue: Issue): string {
  if (/^[a-z]/.test(issue.message)) return issue.message;
  switch (issue.code) {
    case 'invalid_type':
      // A missing input as a whole (a call without a body) is said as what it should have been.
      return isMissing(issue) && issue.path.length ? 'is required' : `must be ${TYPES[issue.expected] ?? `a ${issue.expected}`}`;
    case 'too_small':
    case 'too_big':
      return bound(issue);
    case 'invalid_format':
      if (issue.format === 'starts_with' && 'prefix' in issue) return `must start with "${String(issue.prefix)}"`;
      if (issue.format === 'ends_with' && 'suffix' in issue) return `must end with "${String(issue.suffix)}"`;
      if (issue.format === 'includes' && 'includes' in issue) return `must contain "${String(issue.includes)}"`;
      if (issue.format === 'regex') return 'is not in the expected format';
      return `must be ${FORMATS[issue.format] ?? `a valid ${issue.format}`}`;
    case 'invalid_value':
      return `must be ${listed(issue.values.map(valueWords), 'or')}`;
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'invalid_union':
      // A discriminated union's issue is said of its discriminator, with the values it knows.
      return 'options' in issue && issue.options?.length ? `must be ${listed(issue.options.map(valueWords), 'or')}` : 'does not match any accepted form';
    case 'invalid_key':
      return 'has a key that is not valid';
    case 'invalid_element':
      return 'has an item that is not valid';
    case 'unrecognized_keys':
      return `has unknown ${issue.keys.length > 1 ? 'fields' : 'field'} ${listed(issue.keys, 'and')}`;
    default:
      return 'is not valid';
  }
}

/** One issue as one clause, in lower case as it stands after "Invalid request: ": "email must be a valid email address". */
export function describeIssue(issue: Issue): string {
  if (issue.code === 'unrecognized_keys') {
    // The keys are the client's words: a few are named, each cut short, so a body of huge or countless keys gets a small answer.
    const names = issue.keys.slice(0, MAX_KEYS_NAMED).map((key) => shortened(dotted([...issue.path, key])));
    const rest = issue.keys.length - names.length;
    if (rest > 0) names.push(counted(rest, 'other'));
    return `${listed(names, 'and')} ${issue.keys.length > 1 ? 'are not known fields' : 'is not a known field'}`;
  }
  return `${issue.path.length ? dotted(issue.path) : WHOLE_INPUT} ${problemOf(issue)}`;
}

/**
 * Missing required fields win over every other problem (interface.md §4.1 rule 1); otherwise the first
 * few problems are spelled out, each naming its field.
 */
export function validationError(issues: readonly Issue[]): AppError {
  const missing = issues.filter((issue) => issue.message === REQUIRED);
  if (missing.length) {
    return new AppError('MISSING_REQUIRED_FIELDS', MESSAGES.missingRequiredFields, bounded(missing.map((issue) => dotted(issue.path))));
  }
  const shown = issues.slice(0, MAX_SPELLED_OUT).map(describeIssue);
  const more = issues.length > shown.length ? ` (and ${issues.length - shown.length} more)` : '';
  const fields = issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys' ? issue.keys.map((key) => dotted([...issue.path, key])) : [dotted(issue.path)],
  );
  return new AppError('VALIDATION_FAILED', `Invalid request: ${shown.join('; ')}${more}`, bounded(fields.filter((field) => field !== '')));
}

/** The 400 for one field's value checked outside its procedure's input schema (a new password, checked once it is known to be needed). */
export function fieldValidationError(field: string, issues: readonly Issue[]): AppError {
  return validationError(issues.map((issue) => ({ ...issue, path: [field, ...issue.path] })));
}

/** The 400 for parameters no schema knows, worded as zod's own `unrecognized_keys` issue is. */
export function unknownFieldsError(keys: string[]): AppError {
  return validationError([{ code: 'unrecognized_keys', keys, path: [], message: 'Unrecognized keys', input: {} }]);
}
