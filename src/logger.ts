/** The service's structured logger (pino). Authorization headers and keys are redacted wherever they appear. */
import pino, { type Logger } from 'pino';

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'audit-ledger' },
      redact: { paths: ['req.headers.authorization', 'headers.authorization', 'key', '*.key', 'apiKey'], censor: '[redacted]' },
    },
    // Asynchronous writes to stdout: under load, lines that arrive while one write is in progress go
    // out together in the next, instead of one system call per request. pino flushes it on exit.
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
