/** The service's structured logger (pino). Authorization headers and keys are redacted wherever they appear. */
import pino, { type Logger } from 'pino';

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'audit-ledger' },
      redact: { paths: ['req.headers.authorization', 'headers.authorization', 'key', '*.key', 'apiKey'], censor: '[redacted]' },
    },
    destination,
  );
}
