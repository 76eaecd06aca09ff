/** Request id and one structured log line per request. Headers are not logged: they carry keys. */
import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from './appState';
import type { Metrics } from './metrics';

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * The path as the request line logs it: an invitation link's (its token is a secret) as
 * `/invite/[redacted]`, however it is spelt. The dashboard's router ignores case and decodes escapes
 * (`/INVITE/…`, `/%69nvite/…` open the invitation too).
 */
function loggedPath(path: string): string {
  if (!path.includes('%') && !/invite/i.test(path)) return path;
  let plain = path;
  try {
    plain = decodeURIComponent(path);
  } catch {
    // malformed escapes: the path as sent
  }
  return /\/invite(\/|$)/i.test(plain.replace(/\/+/g, '/')) ? '/invite/[redacted]' : path;
}

/**
 * `ctx.state`: the request id, and a child logger made when first used (a child logger costs more than
 * the rest of an event's bookkeeping; most requests never need one). A class, so that every request's
 * state has the same shape and its getter is one on the prototype, not a property defined per request.
 */
class RequestState implements AppState {
  private child: Logger | undefined;

  constructor(
    private readonly root: Logger,
    readonly requestId: string,
  ) {}

  get log(): Logger {
    return (this.child ??= this.root.child({ requestId: this.requestId }));
  }
}

export function requestContext(log: Logger, metrics: Metrics): Middleware<AppState> {
  // The request line holds no header, query or body, so nothing the logger's redaction (by field name)
  // would hide: it is written without that pass (a third of a line's cost), the same line otherwise. Its
  // fields are these five, and a secret in its path is taken out by `loggedPath` (test: logging).
  const access = log.child({}, { redact: [] });
  // One counter child per method, route and status met: prom-client would otherwise hash the labels on every request.
  const counters = new Map<string, { inc(): void }>();
  const count = (method: string, route: string, status: number) => {
    const key = `${method} ${route} ${status}`;
    let counter = counters.get(key);
    if (!counter) {
      counter = metrics.httpRequests.labels({ method, route, status: String(status) });
      counters.set(key, counter);
    }
    counter.inc();
  };
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('x-request-id');
    const requestId = SAFE_ID.test(incoming) ? incoming : randomUUID();
    ctx.state = new RequestState(log, requestId);
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const route = typeof ctx._matchedRoute === 'string' ? ctx._matchedRoute : ctx.path.startsWith('/v1/') ? '/v1' : 'other';
      count(ctx.method, route, ctx.status);
      // Logged without the query string: filters are customer data.
      access.info({ requestId, method: ctx.method, path: loggedPath(ctx.path), status: ctx.status, ms: Math.round(ms * 10) / 10 }, 'request');
    }
  };
}
