/**
 * How the command line words a failure: one sentence saying what failed, why, and what to do, for an
 * HTTP error answer, a file an option names that cannot be read, a server that cannot be reached, or an
 * unknown option (with the closest valid one).
 */
import { readFileSync } from 'node:fs';

/** A failure already worded for a person: main prints its message as it is, exit code 1. */
export class CliFailure extends Error {
  override readonly name = 'CliFailure';
}

/** An error answer's message (the JSON body's `message`), or its text as it came. */
export function messageOfBody(text: string): string {
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && 'message' in parsed && typeof parsed.message === 'string') return parsed.message;
  } catch {
    // Not JSON: the text itself.
  }
  return text.trim();
}

/** One sentence for an HTTP error answer to the request that was to `what` ("export the events"). */
export function httpFailure(what: string, status: number, bodyText: string): CliFailure {
  const message = messageOfBody(bodyText).replace(/\s+/g, ' ');
  const why = `${status}${message ? ` ${message}` : ''}`;
  if (status === 401) return new CliFailure(`The server refused the API key (${why}): check --key`);
  if (status === 403) return new CliFailure(`The server refused to ${what} with this API key (${why}): use a key with the scope it needs in --key`);
  if (status === 429) return new CliFailure(`The server refused to ${what} for now (${why}): try again later`);
  if (status >= 500) return new CliFailure(`The server failed to ${what} (${why}): try again, or look in the server's log`);
  return new CliFailure(`The server refused to ${what} (${why}): check --url and the options given`);
}

/** A file's text, or a CliFailure naming the option that gave its path. */
export function readOptionFile(path: string, option: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new CliFailure(fileProblem(error, { [option]: path }) ?? `Cannot read ${path} (--${option}): ${String(error)}`);
  }
}

/** A JSON file's content, or a CliFailure naming the option and what the file should be. */
export function readJsonOptionFile(path: string, option: string, expected: string): unknown {
  const text = readOptionFile(path, option);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CliFailure(`Cannot read ${path} (--${option}): it is not JSON (${error instanceof Error ? error.message : String(error)}); give ${expected}`);
  }
}

const FILE_REASONS: Record<string, string> = {
  ENOENT: 'there is no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a directory',
  ENOTDIR: 'a part of its path is not a directory',
};

/** The sentence for a file system error on a path one of the options gave (or any path), else null. */
export function fileProblem(error: unknown, values: Record<string, unknown>): string | null {
  if (!(error instanceof Error) || !('code' in error) || typeof error.code !== 'string') return null;
  const reason = FILE_REASONS[error.code];
  const path = 'path' in error && typeof error.path === 'string' ? error.path : null;
  if (!reason || !path) return null;
  const option = Object.entries(values).find(([, value]) => value === path)?.[0];
  return `Cannot open ${path}${option ? ` (--${option})` : ''}: ${reason}; check the path${option ? ` given to --${option}` : ''}`;
}

/** The sentence for a request that reached no server (fetch's "fetch failed"), else null. */
export function connectionProblem(error: unknown, values: Record<string, unknown>): string | null {
  if (!(error instanceof TypeError) || error.message !== 'fetch failed') return null;
  const cause: unknown = error.cause;
  const code = typeof cause === 'object' && cause !== null && 'code' in cause && typeof cause.code === 'string' ? cause.code : 'no answer';
  const url = typeof values.url === 'string' ? values.url : 'the server';
  return `Cannot reach ${url} (${code}): check --url and that the service is running`;
}

/** Edit distance between two option names, for suggesting the closest. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row.push(Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)));
    }
    previous = row;
  }
  return previous[b.length] ?? 0;
}

/** The answer to an unknown option: the closest valid one, or the list of the valid ones. */
export function unknownOption(given: string, valid: readonly string[], words: string): string {
  const name = given.replace(/^-+/, '').split('=')[0] ?? '';
  const ranked = valid.map((option) => ({ option, d: distance(name, option) })).sort((a, b) => a.d - b.d);
  const best = ranked[0];
  const close = best && (best.d <= Math.max(2, Math.floor(name.length / 3)) || (name.length >= 3 && best.option.startsWith(name)));
  if (best && close) return `Unknown option --${name}; did you mean --${best.option}?`;
  return `Unknown option --${name}; ${words} takes ${valid.map((o) => `--${o}`).join(', ')}`;
}
