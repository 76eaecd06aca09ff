/** /trpc: the same router for TypeScript clients (httpBatchLink, httpBatchStreamLink for export). */
import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import type { Middleware } from 'koa';
import { LIMITS } from '../domain/event';
import { AppError } from '../domain/errors';
import type { HttpServices } from '../services/container';
import { createContext } from '../trpc/context';
import { loggableError } from '../db/errors';
import { toAppError } from '../trpc/errors';
import { appRouter } from '../trpc/router';
import type { AppState } from './appState';
import { throttleAddress } from './clientAddress';
import { replayedHeaders } from './replayedHeaders';
import { sessionCookieJar } from './sessionCookie';

export const TRPC_PREFIX = '/trpc';

/** Methods the fetch API's Request refuses to carry (fetch spec, "forbidden method"). */
const FORBIDDEN_FETCH_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);

/** `secureCookies`: whether the dashboard is served over HTTPS (directly or behind a trusted proxy). */
export function trpcRoute(services: HttpServices, options: { secureCookies: boolean; maxBatchSize: number }): Middleware<AppState> {
  return async (ctx, next) => {
    if (!ctx.path.startsWith(`${TRPC_PREFIX}/`)) {
      await next();
      return;
    }
    // tRPC's handler builds a fetch Request, whose constructor throws for TRACE, TRACK and CONNECT (a 500).
    if (FORBIDDEN_FETCH_METHODS.has(ctx.method)) throw new AppError('METHOD_NOT_ALLOWED', `${ctx.method} is not supported on ${TRPC_PREFIX}`, { allow: 'GET, POST' });
    // Koa must neither answer itself nor replace tRPC's status (it starts every response at 404). Its
    // reason phrase goes with that 200: cleared, Node gives the one of the status tRPC sets (not "400 OK").
    ctx.respond = false;
    ctx.status = 200;
    ctx.res.statusMessage = '';
    await nodeHTTPRequestHandler({
      req: ctx.req,
      res: ctx.res,
      path: ctx.path.slice(TRPC_PREFIX.length + 1),
      router: appRouter,
      // A batch of events may be larger than any other call (BATCH_MAX_BYTES).
      maxBodySize: Math.max(LIMITS.bodyBytes, services.api.limits.batchBytes),
      maxBatchSize: options.maxBatchSize,
      createContext: ({ req, res, info }) =>
        createContext(services, req, ctx.state.requestId, info.type, {
          cookies: sessionCookieJar(req, res, options.secureCookies || ctx.secure),
          clientAddress: throttleAddress(ctx.ip),
          batched: info.isBatchCall && info.calls.length > 1,
        }),
      responseMeta: ({ ctx: context, errors }) => {
        const retryAfter = Math.max(0, ...errors.map((error) => toAppError(error).retryAfter ?? 0));
        return { headers: { ...replayedHeaders(context), ...(retryAfter > 0 ? { 'Retry-After': String(retryAfter) } : {}) } };
      },
      onError: ({ error }) => {
        if (toAppError(error).status >= 500) ctx.state.log.error(loggableError(error.cause ?? error), 'trpc call failed');
      },
    });
  };
}
