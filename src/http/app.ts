/** The Koa application: every HTTP surface of the service, in the order a request meets them. */
import type { RequestListener } from 'node:http';
import Router from '@koa/router';
import Koa, { type ParameterizedContext } from 'koa';
import compose from 'koa-compose';
import mount from 'koa-mount';
import { AppError } from '../domain/errors';
import { UNAVAILABLE_RETRY_AFTER_S } from '../db/errors';
import type { HttpServices } from '../services/container';
import type { AppState } from './appState';
import { dashboardAssets } from './dashboardAssets';
import { docsPage } from './docsPage';
import { errorHandling } from './errorHandling';
import { apiKeyExportAuth, exportRoute, viewerExportAuth } from './exportRoute';
import { proofsRoute } from './proofsRoute';
import { tilesApi } from './tilesRoute';
import { createMetrics, type Metrics } from './metrics';
import { renderOpenApiDocument } from './openapiDocument';
import { requestContext } from './requestContext';
import { REST_OPERATIONS, REST_PREFIX, restApi } from './restApi';
import { rateLimitPerApiKey } from './rateLimit';
import { refuseCrossSitePosts } from './sameOrigin';
import { sessionExportAuth } from './sessionExport';
import { admitStrangers } from './strangers';
import { TRPC_PREFIX, trpcRoute } from './trpcRoute';

/**
 * Keep-alive of the public server: a connection idle this long is closed. Node's 5 s default is shorter
 * than what clients and proxies assume (load balancers keep idle connections 60 s; undici reuses one until
 * the server's hint less a second): a server busy for a moment past it closes a connection whose next
 * request is already on the wire, and the client gets ECONNRESET. Headers must be allowed longer still.
 */
export const SERVER_TIMEOUTS = { keepAliveTimeout: 65_000, headersTimeout: 66_000 } as const;

export interface HttpApp {
  koa: Koa<AppState>;
  /** For `http.createServer`: Koa answers every error itself, so its promise is not awaited. */
  listener: RequestListener;
  metrics: Metrics;
}

export interface HttpOptions {
  defaultMetrics?: boolean;
  /** Where people reach the service; an https:// address makes the session cookie Secure. */
  publicUrl?: string | undefined;
  /** Behind a reverse proxy: take the client address and protocol from X-Forwarded-*. */
  trustProxy?: boolean;
  /** How many proxies' X-Forwarded-For entries to trust, from the right (default 1). */
  trustProxyHops?: number;
  /** The built dashboard; tests may point elsewhere. */
  dashboardDir?: string;
  /** VIEWER_FRAME_ANCESTORS: who may frame the hosted viewer (CSP frame-ancestors). */
  viewerFrameAncestors?: string;
  /** LEDGER_INSTALLATION_TOKEN: the installation log's tiles API asks for it; unset, that log is public. */
  installationToken?: string | undefined;
  /**
   * The time (ms) the per-key and per-address rate limits measure, by default the wall clock: not the
   * injected clock, which tests and the model hold still or move by days (it would starve or flood the
   * buckets); a test of the limits passes its own.
   */
  rateNow?: () => number;
}

export function createHttpApp(services: HttpServices, options: HttpOptions = {}): HttpApp {
  const metrics = createMetrics({ defaultMetrics: options.defaultMetrics ?? false, stats: services.stats });
  // The client address is the right-most X-Forwarded-For entry that a trusted proxy added: entries
  // further left were sent by the client and can say anything.
  const koa = new Koa<AppState>({ proxy: options.trustProxy ?? false, maxIpsCount: options.trustProxyHops ?? 1 });
  const secureCookies = options.publicUrl?.startsWith('https://') ?? false;
  // Koa's own error printer would write stacks to stderr; errors are logged by errorHandling instead.
  koa.silent = true;
  const openapi = renderOpenApiDocument();

  const routes = new Router<AppState>();
  routes.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  routes.get('/readyz', async (ctx) => {
    try {
      await services.ping();
      ctx.body = { status: 'ready' };
    } catch (err) {
      ctx.state.log.warn({ err }, 'database ping failed');
      ctx.status = 503;
      ctx.set('Retry-After', String(UNAVAILABLE_RETRY_AFTER_S));
      ctx.body = { status: 'unavailable', message: 'Database is not reachable' };
    }
  });
  routes.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = openapi;
  });
  routes.get('/v1/events/export', exportRoute(services, metrics, apiKeyExportAuth(services, 'events:read')));
  routes.get('/v1/ledger/proofs', proofsRoute(services, apiKeyExportAuth(services, 'ledger:read')));
  // The dashboard's download: the same export, with the session cookie as the way in (never on /v1).
  routes.get('/session/events/export', exportRoute(services, metrics, sessionExportAuth(services, secureCookies)));
  // The hosted viewer's download: the same export, narrowed to what its viewer token shows.
  routes.get('/viewer/export', exportRoute(services, metrics, viewerExportAuth(services)));
  // The ledger is append-only: no interface changes or deletes an event. The 405 says which methods the
  // path has (`Allow`), as the REST operations define them (`batch` is no event id). A path the REST API
  // would not answer is left to its 404: the router ignores case, the API does not.
  const methodsOf = (path: string) => REST_OPERATIONS.filter((op) => op.path === path).map((op) => op.method).sort().join(', ');
  const eventPaths: [RegExp, string][] = [
    [/^\/v1\/events\/?$/, methodsOf('/events')],
    [/^\/v1\/events\/batch\/?$/, methodsOf('/events/batch')],
    [/^\/v1\/events\/[^/]+\/?$/, methodsOf('/events/{id}')],
  ];
  routes.register(['/v1/events', '/v1/events/:id'], ['PUT', 'PATCH', 'DELETE'], async (ctx, next) => {
    const allow = eventPaths.find(([pattern]) => pattern.test(ctx.path))?.[1];
    if (allow === undefined) {
      await next();
      return;
    }
    throw new AppError('METHOD_NOT_ALLOWED', 'Events are append-only: they cannot be changed or deleted', { allow });
  });

  koa.use(requestContext(services.log, metrics));
  koa.use(errorHandling);
  koa.use(rateLimitPerApiKey(services.api.limits, () => services.ingest.instances.share, options.rateNow));
  koa.use(admitStrangers(services, services.api.limits, secureCookies, options.rateNow));
  koa.use(refuseCrossSitePosts({ prefixes: [`${TRPC_PREFIX}/`], publicUrl: options.publicUrl }));
  // A request whose method no route has (every POST: the API's writes) passes the router by: its matching
  // would only find nothing, at the cost of testing every route's path.
  const routed = routes.routes();
  const routedMethods = new Set(routes.stack.flatMap((layer) => layer.methods));
  const api = restApi(services);
  const rest = mount(REST_PREFIX, api);
  const pages = compose<ParameterizedContext<AppState>>([
    tilesApi(services, apiKeyExportAuth(services, 'ledger:read'), options.installationToken),
    async (ctx, next) => {
      // (The router's middleware types its context with the params it adds: the same context at run time.)
      if (routedMethods.has(ctx.method)) await routed(ctx as Parameters<typeof routed>[0], next);
      else await next();
    },
    docsPage(),
    dashboardAssets(options.dashboardDir, options.viewerFrameAncestors),
    trpcRoute(services, { secureCookies, maxBatchSize: services.api.limits.trpcMaxBatch }),
    rest,
  ]);
  // A POST under /v1/ (every event written) goes straight to the REST API: the tiles, the pages and the
  // dashboard answer only GET and HEAD, the router has no POST route and /trpc is another prefix, so
  // each of them would only pass it on (one layer of promises each, on the path of every event).
  // There the prefix is taken off the URL by hand when it begins it (koa-mount sets `ctx.path`, which
  // parses and formats the URL, twice a request); any other form of URL goes through koa-mount.
  const straightToRest = !routedMethods.has('POST');
  koa.use(async (ctx, next) => {
    if (!straightToRest || ctx.method !== 'POST' || !ctx.path.startsWith(`${REST_PREFIX}/`)) {
      await pages(ctx, next);
      return;
    }
    const url = ctx.url;
    if (!url.startsWith(`${REST_PREFIX}/`)) {
      await rest(ctx, next);
      return;
    }
    ctx.url = url.slice(REST_PREFIX.length);
    try {
      await api(ctx, async () => {
        ctx.url = url;
        await next();
      });
    } finally {
      ctx.url = url;
    }
  });
  const handle = koa.callback();
  return { koa, listener: (req, res) => void handle(req, res), metrics };
}
