/** What a command of the command line is: its words, its own options and help, and what it answers. */
import type { ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/** A mistake in how the command was called: exit code 2, with the command's help. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** What a command answers: one JSON document with --json, text otherwise; `exitCode` (default 0) for one that finished with something to report. */
export interface Output {
  json: Record<string, unknown>;
  text: string;
  exitCode?: number;
}

export type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

export interface Command {
  /** The words that name it: `org create`. */
  words: string;
  /** One line for the list of commands. */
  summary: string;
  /** Its arguments, as its help shows them: `--name NAME [--plan P]`. */
  synopsis: string;
  /** More help, shown by `<command> --help`. */
  details?: string;
  /** Its options: strings and flags, none repeated. */
  options: Options;
  /** How many positional arguments it takes (after its words). */
  positionals?: { min: number; max: number };
  run(values: Values, positionals: string[]): Promise<Output>;
}

/** A required string option, or a UsageError naming it. */
export function need(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

/** An optional string option. */
export function opt(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

export const str = { type: 'string' } as const;
/** A string option that may be given more than once. */
export const strs = { type: 'string', multiple: true } as const;

/** Every value of a repeatable option. */
export function all(values: Values, name: string): string[] {
  const value = values[name];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : typeof value === 'string' ? [value] : [];
}
export const flag = { type: 'boolean' } as const;
