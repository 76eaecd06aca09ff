/** Koa's side of error handling: every error any route throws is answered through `toErrorResponse`, never with a stack. */
import type { Middleware, ParameterizedContext } from 'koa';
import { AppError } from '../domain/errors';
import { loggableError } from '../db/errors';
import { toErrorResponse } from '../trpc/errors';
import type { AppState } from './appState';

export function sendError(ctx: ParameterizedContext<AppState>, error: unknown): void {
  const response = toErrorResponse(error);
  ctx.status = response.status;
  ctx.set(response.headers);
  ctx.body = response.body;
  if (response.status >= 500) ctx.state.log.error(loggableError(error instanceof AppError ? (error.cause ?? error) : error), 'request failed');
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
      ctx.state.log.error(loggableError(error), 'response failed after headers were sent');
      ctx.res.destroy();
      return;
    }
    // A route that answers by itself (/v1, /trpc) hands its errors back to Koa to send.
    ctx.respond = true;
    sendError(ctx, error);
  }
};
