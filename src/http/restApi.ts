/**
 * /v1 (mounted there by `app.ts`): the router's procedures as REST, through trpc-to-openapi's node
 * handler. A procedure's path and method are in its `meta.openapi`, its success status in `meta.successStatus`.
 */
import type { Scope } from '../domain/apiKey';
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import { createOpenApiNodeHttpHandler, forEachOpenApiProcedure } from 'trpc-to-openapi';
import { unknownFieldsError } from '../domain/validation';
import type { HttpServices } from '../services/container';
import { LIMITS } from '../domain/event';
import { createContext } from '../trpc/context';
import type { ProcedureMeta } from '../trpc/init';
import { appRouter } from '../trpc/router';
import type { AppState } from './appState';
import { readJsonObject } from './jsonBody';
import { replayedHeaders } from './replayedHeaders';

/** The one operation whose body may pass the 1 MiB of the others (BATCH_MAX_BYTES), as /v1 sees it. */
const BATCH_PATH = '/events/batch';

export const REST_PREFIX = '/v1';

/** A REST operation: its procedure, its method and path under /v1, and the status of its success. */
export interface RestOperation {
  procedure: string;
  method: string;
  path: string;
  successStatus: number;
  /** What an API key needs to call it. */
  scope: Scope | undefined;
}

export const REST_OPERATIONS: RestOperation[] = [];
forEachOpenApiProcedure<ProcedureMeta>(appRouter._def.procedures, ({ path, meta }) => {
  REST_OPERATIONS.push({ procedure: path, method: meta.openapi.method, path: meta.openapi.path, successStatus: meta.successStatus ?? 200, scope: meta.scope });
});
const SUCCESS_STATUS = new Map(REST_OPERATIONS.map((op) => [op.procedure, op.successStatus]));

export function restApi(services: HttpServices): Middleware<AppState> {
  const handler = createOpenApiNodeHttpHandler({
    router: appRouter,
    // The request id is on the response already (X-Request-Id, set by `requestContext`).
    createContext: ({ req, res, info }) => createContext(services, req, String(res.getHeader('x-request-id')), info.type),
    // trpc-to-openapi's `info.calls` is empty: `paths` (deprecated by tRPC for v12) is where it names the procedure.
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    responseMeta: ({ ctx, paths, errors }) => ({
      status: errors.length ? undefined : SUCCESS_STATUS.get(paths?.[0] ?? ''),
      headers: replayedHeaders(ctx),
    }),
    // The adapter would write its own error body (tRPC codes, "Input validation failed"); throwing here,
    // before it writes anything, hands the error to Koa's error handling like every other route's.
    onError: ({ error }) => {
      throw error;
    },
  });

  return async (ctx, next) => {
    if (['POST', 'PUT', 'PATCH'].includes(ctx.method)) {
      // The adapter parses a body only under an exact `application/json` (trpc/trpc#4783), and takes one
      // it finds in `req.body` as it is: so the body is read here, by the service's own rules.
      const req = ctx.req as IncomingMessage & { body?: unknown };
      // Never serialized again on the way to the procedure: the adapter's `getRequestSignal`, which built a
      // whole fetch Request from it, is patched (patches/trpc-to-openapi+3.3.0.patch), so a body nested
      // 300,000 levels deep reaches validation and gets its 400 (events.create).
      req.body = await readJsonObject(ctx, ctx.path === BATCH_PATH ? services.api.limits.batchBytes : LIMITS.bodyBytes);
    }
    // The adapter gathers query parameters in a plain `{}` (getQuery in its node-http/input.ts), so a
    // name Object.prototype already has (`toString`, `__proto__`) makes it throw or vanish. No field of
    // ours has such a name: it is refused as the unknown parameter it is.
    const inherited = Object.keys(ctx.query).filter((name) => name in Object.prototype);
    if (inherited.length) throw unknownFieldsError(inherited);

    // HEAD is GET without its body (RFC 9110 §9.3.2: a general-purpose server must answer it). The adapter
    // knows GET only, so it is handed one; Node leaves the body out of its answer to a HEAD.
    const head = ctx.req.method === 'HEAD';
    if (head) ctx.req.method = 'GET';
    const found = { procedure: true };
    ctx.respond = false; // the adapter writes successes itself
    try {
      await handler(ctx.req, ctx.res, () => {
        found.procedure = false;
      });
    } finally {
      if (head) ctx.req.method = 'HEAD';
    }
    if (!found.procedure) {
      ctx.respond = true;
      await next();
    }
  };
}
