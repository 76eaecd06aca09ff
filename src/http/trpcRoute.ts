/** /trpc: the same router for TypeScript clients (httpBatchLink, httpBatchStreamLink for export). */
import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import type { Middleware } from 'koa';
import { LIMITS } from '../domain/event';
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

/** `secureCookies`: whether the dashboard is served over HTTPS (directly or behind a trusted proxy). */
export function trpcRoute(services: HttpServices, options: { secureCookies: boolean; maxBatchSize: number }): Middleware<AppState> {
  return async (ctx, next) => {
    if (!ctx.path.startsWith(`${TRPC_PREFIX}/`)) {
      await next();
      return;
    }
    // Koa must neither answer itself nor replace tRPC's status (it starts every response at 404).
    ctx.respond = false;
    ctx.status = 200;
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
