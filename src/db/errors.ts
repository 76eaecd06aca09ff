/**
 * What the driver's errors mean to a client. Connection-level failures (refused, reset, no server to
 * select within the configured time, a client that is closing) say the database is unreachable: the
 * request may be retried once it is back, so they are a 503 with Retry-After, never a 500.
 */
import {
  type Collection,
  type Document,
  type InsertOneOptions,
  MongoError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  type OptionalUnlessRequiredId,
} from 'mongodb';
import { AppError } from '../domain/errors';

/** The code of a document a unique index refused, on MongoDB and FerretDB alike. */
export const DUPLICATE_KEY = 11000;

export function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}

/**
 * Inserts `doc`; false when a unique index already holds its key. The one atomic step both databases
 * offer: what claims an email, an Idempotency-Key or a checkpoint's size.
 */
export async function insertUnlessTaken<T extends Document>(collection: Collection<T>, doc: OptionalUnlessRequiredId<T>, options?: InsertOneOptions): Promise<boolean> {
  try {
    await collection.insertOne(doc, options);
    return true;
  } catch (error) {
    if (isDuplicateKey(error)) return false;
    throw error;
  }
}

/** Seconds a client is asked to wait before retrying while the database is unreachable. */
export const UNAVAILABLE_RETRY_AFTER_S = 2;

/**
 * Socket errors the driver sometimes passes on unwrapped (a write to a connection the server just
 * closed: EPIPE, "This socket has been ended by the other party").
 */
const SOCKET_ERROR_CODES = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

export function isDatabaseUnreachable(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  return (
    (typeof code === 'string' && SOCKET_ERROR_CODES.has(code)) ||
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoOperationTimeoutError
  );
}

/** The 503 for an unreachable database, or null when the error is something else. */
export function unreachableDatabaseError(error: unknown): AppError | null {
  if (!isDatabaseUnreachable(error)) return null;
  return new AppError('SERVICE_UNAVAILABLE', 'The database is not reachable; retry later', { retryAfter: UNAVAILABLE_RETRY_AFTER_S }, { cause: error });
}

/**
 * A driver error as it may be logged: name and codes only. Bulk write errors carry the documents they
 * failed on (`writeErrors[].op`), and events are customer data that logs must never hold.
 */
export function describeDbError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { error: typeof error };
  const coded = error as Error & { code?: unknown; codeName?: unknown };
  const described: Record<string, unknown> = { name: error.name, code: coded.code, codeName: coded.codeName };
  // Connection errors say where and why, never what was being written.
  if (isDatabaseUnreachable(error)) described.message = error.message;
  return described;
}

/** Log fields for any error: driver errors described as above, anything else with its stack (`err`). */
export function loggableError(error: unknown): Record<string, unknown> {
  return error instanceof MongoError ? { error: describeDbError(error) } : { err: error };
}
