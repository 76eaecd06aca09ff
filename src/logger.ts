/**
 * The service's structured logger (pino). Authorization headers and keys are redacted wherever they appear.
 * JSON lines, except on a terminal, where a person reads them: there lines are pretty-printed (pino-pretty).
 */
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import { ConfigError } from './config/env';

export type LogFormat = 'json' | 'pretty';

/** How often JSON log lines that wait are written (ms), fewer than 4 KiB of them or not. */
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
  // lines) wait, or at the next tick of a LOG_FLUSH_MS timer. Written as they came, a service answering a
  // request every half millisecond made one write per request line, each a round through libuv's thread
  // pool and a wake-up of the event loop when it ended. pino writes what waits, synchronously, when the
  // process exits (SIGTERM, SIGINT, process.exit, an uncaught error); a process ended by another signal
  // or killed outright (SIGKILL, out of memory) loses what waits. The start-up line is flushed (main.ts).
  const stdout = pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: LOG_FLUSH_MS });
  // That last write may find no reader (`npm start | viewer` ended by Ctrl-C): nothing more can be written
  // then, and the process must still exit (sonic-boom retried EPIPE for ever: patches/sonic-boom+4.2.1.patch
  // makes it throw).
  const flushSync = stdout.flushSync.bind(stdout);
  stdout.flushSync = () => {
    try {
      flushSync();
    } catch {
      // stdout is gone
    }
  };
  return pino(options, stdout);
}
