/**
 * The one rule for every string the API accepts, besides metadata (kept as JSON text, so any JSON
 * string survives): no U+0000, which PostgreSQL (under FerretDB) and C-string consumers of exports
 * refuse, and no unpaired UTF-16 surrogate, which has no UTF-8 form and would be stored as U+FFFD,
 * i.e. silently altered. Both are refused with a 400 naming the field, never passed on.
 */
import { z } from 'zod';

/** Why a string cannot be stored exactly, or null when it can. */
export function textProblem(value: string): string | null {
  if (value.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (!value.isWellFormed()) return 'must be well-formed Unicode (it has an unpaired surrogate)';
  return null;
}

/** `z.string()` with the rule above: every string input of every procedure is built from this. */
export function text(params?: Parameters<typeof z.string>[0]): z.ZodString {
  return z.string(params).refine((value) => textProblem(value) === null, {
    error: (issue) => textProblem(String(issue.input)) ?? 'is not valid text',
  });
}
