/** Turns zod issues into the service's 400 errors with messages that name the problem. */
import type { z } from 'zod';
import { AppError, MESSAGES } from './errors';
import { REQUIRED } from './event';

type Issue = z.core.$ZodIssue;

/**
 * The most fields one error names. A body of millions of invalid items must get a small answer: the
 * first few are named, `fields_total` says how many there were.
 */
export const MAX_LISTED_FIELDS = 20;

/** The first MAX_LISTED_FIELDS of `fields`, and their total when some were left out. */
function bounded(fields: string[]): { fields: string[]; fieldsTotal?: number } {
  return fields.length > MAX_LISTED_FIELDS ? { fields: fields.slice(0, MAX_LISTED_FIELDS), fieldsTotal: fields.length } : { fields };
}

/** `events[3].actor.id`: names with dots, array positions in brackets. */
function dotted(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part)), '');
}

function describe(issue: Issue): string {
  if (issue.code === 'unrecognized_keys') {
    const where = issue.path.length ? ` in ${dotted(issue.path)}` : '';
    return `unknown field${issue.keys.length > 1 ? 's' : ''}${where}: ${issue.keys.join(', ')}`;
  }
  return issue.path.length ? `${dotted(issue.path)} ${issue.message}` : issue.message;
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
  const shown = issues.slice(0, 3).map(describe);
  const more = issues.length > shown.length ? ` (and ${issues.length - shown.length} more)` : '';
  const fields = issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys' ? issue.keys.map((key) => dotted([...issue.path, key])) : [dotted(issue.path)],
  );
  return new AppError('VALIDATION_FAILED', `Invalid request: ${shown.join('; ')}${more}`, bounded(fields.filter((field) => field !== '')));
}

/** The 400 for parameters no schema knows, worded as zod's own `unrecognized_keys` issue is. */
export function unknownFieldsError(keys: string[]): AppError {
  return validationError([{ code: 'unrecognized_keys', keys, path: [], message: 'Unrecognized keys', input: {} }]);
}
