/** The one place where errors become HTTP responses on the Koa side: JSON `{ message, code }`, never a stack. */
import type { Middleware } from 'koa';
import { AppError, type ErrorCode, toErrorBody } from '../domain/errors';
import { toClientError } from '../trpc/init';
import type { AppState } from './appState';

/** Errors raised by Koa middleware (body parsing) carry an HTTP status; give them our codes and texts. */
function fromHttpError(error: unknown): AppError | null {
  if (error instanceof AppError || !(error instanceof Error) || !('status' in error) || typeof error.status !== 'number') return null;
  if (error.status === 413) return new AppError('PAYLOAD_TOO_LARGE', 'Request body exceeds the 1 MiB limit');
  if (error instanceof SyntaxError && /prototype property/.test(error.message)) {
    // co-body parses with secure-json-parse, which refuses keys that poison JavaScript consumers.
    return new AppError('VALIDATION_FAILED', 'Request body must not contain "__proto__" or "constructor.prototype" keys');
  }
  if (error instanceof SyntaxError) return new AppError('MALFORMED_JSON', `Request body is not valid JSON: ${error.message}`);
  if (error.status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE', error.message);
  if (error.status >= 400 && error.status < 500) {
    const code: ErrorCode = error.status === 404 ? 'NOT_FOUND' : error.status === 405 ? 'METHOD_NOT_ALLOWED' : 'VALIDATION_FAILED';
    return new AppError(code, error.message);
  }
  return null;
}

export function sendError(ctx: Parameters<Middleware<AppState>>[0], error: AppError): void {
  ctx.status = error.status;
  ctx.body = toErrorBody(error);
  if (error.retryAfter !== undefined) ctx.set('Retry-After', String(error.retryAfter));
  if (error.status >= 500) ctx.state.log.error({ err: error.cause ?? error }, 'request failed');
}

export const errorHandling: Middleware<AppState> = async (ctx, next) => {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined && !ctx.headerSent && ctx.respond !== false) {
      sendError(ctx, new AppError('NOT_FOUND', 'Not found'));
    }
  } catch (error) {
    if (ctx.headerSent) {
      // A streamed body has started: the only honest signal left is to cut the connection.
      ctx.state.log.error({ err: error }, 'response failed after headers were sent');
      ctx.res.destroy();
      return;
    }
    sendError(ctx, fromHttpError(error) ?? toClientError(error));
  }
};
