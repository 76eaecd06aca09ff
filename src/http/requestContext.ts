/** Request id and one structured log line per request. Headers are not logged: they carry keys. */
import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from './appState';
import type { Metrics } from './metrics';

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

export function requestContext(log: Logger, metrics: Metrics): Middleware<AppState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('x-request-id');
    const requestId = SAFE_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    // A child logger costs more than the rest of an event's bookkeeping; most requests never need one.
    let child: Logger | undefined;
    Object.defineProperty(ctx.state, 'log', { get: () => (child ??= log.child({ requestId })), enumerable: true });
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const route = typeof ctx._matchedRoute === 'string' ? ctx._matchedRoute : ctx.path.startsWith('/v1/') ? '/v1' : 'other';
      metrics.httpRequests.inc({ method: ctx.method, route, status: String(ctx.status) });
      // Logged without the query string: filters are customer data.
      log.info({ requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10 }, 'request');
    }
  };
}
