/**
 * The service's structured logger (pino). Authorization headers and keys are redacted wherever they appear.
 * JSON lines, except on a terminal, where a person reads them: there lines are pretty-printed (pino-pretty).
 */
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import { ConfigError } from './config/env';

export type LogFormat = 'json' | 'pretty';

/** The longest a JSON log line waits in the process before it is written (ms). */
export const LOG_FLUSH_MS = 250;

/**
 * LOG_FORMAT (`json` or `pretty`), or, unset, pretty when stdout is a terminal and JSON otherwise, so a
 * log collector, a pipe or a file always gets JSON.
 */
export function logFormatOf(env: NodeJS.ProcessEnv, stdoutIsTty: boolean): LogFormat {
  const given = env.LOG_FORMAT;
  if (given === undefined || given === '') return stdoutIsTty ? 'pretty' : 'json';
  if (given === 'json' || given === 'pretty') return given;
  throw new ConfigError(`Invalid configuration: LOG_FORMAT must be json or pretty (got "${given}")`);
}

/**
 * The logger. With a destination (tests, the CLI's stderr) it writes JSON there; otherwise to stdout,
 * in the format LOG_FORMAT or the terminal chooses.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'audit-ledger' },
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'key', '*.key', 'apiKey'], censor: '[redacted]' },
  };
  if (destination) return pino(options, destination);
  const tty = process.stdout.isTTY;
  if (logFormatOf(process.env, tty) === 'pretty') {
    // In this process, not a worker thread: the lines a person waits for (the start-up line, a fatal
    // error before exit) are written when logged. Colours only on a terminal.
    return pino(options, pretty({ destination: 1, sync: true, colorize: tty, ignore: 'pid,hostname,service' }));
  }
  // Asynchronous, gathered writes to stdout: lines go out together once 4 KiB of them (twenty-odd request
  // lines) wait, or every LOG_FLUSH_MS. Written as they came, a service answering a request every half
  // millisecond made one write per request line, each a round through libuv's thread pool and a wake-up
  // of the event loop when it ended. pino writes what waits when the process exits (also by
  // process.exit or an uncaught error); a process killed outright (SIGKILL, out of memory) loses at most
  // the last LOG_FLUSH_MS of lines. The start-up line is flushed at once (main.ts).
  return pino(options, pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: LOG_FLUSH_MS }));
}
