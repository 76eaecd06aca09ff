/**
 * The log's format as a person or a collector meets it: a child process whose stdout is a pipe (not a
 * terminal) logs JSON lines, as before; LOG_FORMAT=pretty forces the text a terminal gets (the choice a
 * real terminal makes is logFormatOf's, tested below without one); a bad LOG_FORMAT is refused.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { logFormatOf } from '../../src/logger';

const ROOT = join(__dirname, '..', '..');

/** Logs one line through createLogger, as main.ts does, in a child process with stdout piped. */
function logOnce(env: Record<string, string>): { stdout: string; stderr: string; status: number | null } {
  const program = "require('./src/logger.ts').createLogger('info').info({ port: 3000 }, 'Audit Ledger listening on http://localhost:3000')";
  const { LOG_FORMAT: _unset, ...rest } = process.env;
  return spawnSync(process.execPath, ['--import', 'tsx', '-e', program], { cwd: ROOT, env: { ...rest, ...env }, encoding: 'utf8' });
}

test('not a terminal: one JSON line', () => {
  const { stdout, status } = logOnce({});
  expect(status).toBe(0);
  expect(JSON.parse(stdout.trim())).toMatchObject({ level: 30, port: 3000, msg: 'Audit Ledger listening on http://localhost:3000', service: 'audit-ledger' });
});

test('LOG_FORMAT=pretty: a line of text with the level, the message and the fields', () => {
  const { stdout, status } = logOnce({ LOG_FORMAT: 'pretty' });
  expect(status).toBe(0);
  const [first = '', ...rest] = stdout.trim().split('\n');
  expect(() => JSON.parse(first) as unknown).toThrow();
  expect(first).toMatch(/^\[[\d:.]+\] INFO: Audit Ledger listening on http:\/\/localhost:3000$/);
  expect(rest.map((line) => line.trim())).toEqual(['port: 3000']);
});

test('the format follows the terminal unless LOG_FORMAT says; anything else is refused', () => {
  expect(logFormatOf({}, true)).toBe('pretty');
  expect(logFormatOf({}, false)).toBe('json');
  expect(logFormatOf({ LOG_FORMAT: 'json' }, true)).toBe('json');
  expect(logFormatOf({ LOG_FORMAT: 'pretty' }, false)).toBe('pretty');
  expect(() => logFormatOf({ LOG_FORMAT: 'text' }, true)).toThrow('LOG_FORMAT must be json or pretty (got "text")');
});
