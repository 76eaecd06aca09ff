/**
 * The one mapping from anything thrown to what a client sees, used by every surface: REST (/v1 and the
 * plain Koa routes), /trpc's error formatter and its response headers.
 */
import { TRPCError } from '@trpc/server';
import { ZodError } from 'zod';
import { AppError, type ErrorCode, MESSAGES, type TErrorBody, toErrorBody } from '../domain/errors';
import { validationError } from '../domain/validation';
import { unreachableDatabaseError } from '../db/errors';

/** For errors that tRPC, the REST adapter or Koa raise themselves, our code with the same HTTP status. */
const BY_STATUS: Partial<Record<number, ErrorCode>> = {
  400: 'VALIDATION_FAILED',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};
const TRPC_STATUS: Partial<Record<TRPCError['code'], number>> = {
  BAD_REQUEST: 400,
  PARSE_ERROR: 400,
  NOT_FOUND: 404,
  METHOD_NOT_SUPPORTED: 405,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
};

function statusOf(error: unknown): number | undefined {
  if (error instanceof TRPCError) return TRPC_STATUS[error.code];
  // Koa's and its middlewares' http-errors carry the status they mean.
  const status = error instanceof Error && 'status' in error ? error.status : undefined;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : undefined;
}

/** Any thrown value as the AppError a client may see; anything unexpected is the spec's bare 500. */
export function toAppError(error: unknown): AppError {
  const cause = error instanceof TRPCError && error.cause ? error.cause : error;
  if (cause instanceof AppError) return cause;
  // An input that fails its schema is the client's (tRPC: BAD_REQUEST); an output that fails its schema
  // (tRPC: INTERNAL_SERVER_ERROR, "Output validation failed") is the service's own bug: a 500, logged.
  if (cause instanceof ZodError && !(error instanceof TRPCError && error.code === 'INTERNAL_SERVER_ERROR')) return validationError(cause.issues);
  if (cause instanceof Error && cause.cause instanceof AppError) return cause.cause;
  const unreachable = unreachableDatabaseError(cause);
  if (unreachable) return unreachable;
  const code = BY_STATUS[statusOf(error) ?? 0];
  if (code && error instanceof Error) return new AppError(code, error.message);
  // Anything else is unexpected: the spec's bare 500, the cause kept for the log only.
  return new AppError('INTERNAL_ERROR', MESSAGES.internal, {}, { cause });
}

export interface ErrorResponse {
  status: number;
  body: TErrorBody;
  headers: Record<string, string>;
}

/** What a REST client gets for an error: the status, the JSON body, `Retry-After` when waiting helps and a 405's `Allow`. */
export function toErrorResponse(error: unknown): ErrorResponse {
  const app = toAppError(error);
  return {
    status: app.status,
    body: toErrorBody(app),
    headers: {
      ...(app.retryAfter === undefined ? {} : { 'Retry-After': String(app.retryAfter) }),
      ...(app.details.allow === undefined ? {} : { Allow: app.details.allow }),
    },
  };
}
