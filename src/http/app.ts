/** The Koa application: every HTTP surface of the service, in the order a request meets them. */
import Router from '@koa/router';
import Koa from 'koa';
import { AppError } from '../domain/errors';
import type { Services } from '../services/container';
import type { AppState } from './appState';
import { docsPage } from './docsPage';
import { errorHandling } from './errorHandling';
import { exportRoute } from './exportRoute';
import { createMetrics, type Metrics } from './metrics';
import { renderOpenApiDocument } from './openapiDocument';
import { requestContext } from './requestContext';
import { restApi } from './restApi';
import { trpcRoute } from './trpcRoute';

export interface HttpApp {
  koa: Koa<AppState>;
  metrics: Metrics;
}

export function createHttpApp(services: Services, options: { defaultMetrics?: boolean } = {}): HttpApp {
  const metrics = createMetrics({ defaultMetrics: options.defaultMetrics ?? false, writer: services.writer.stats });
  const koa = new Koa<AppState>({ proxy: false });
  // Koa's own error printer would write stacks to stderr; errors are logged by errorHandling instead.
  koa.silent = true;
  const openapi = renderOpenApiDocument();

  const routes = new Router<AppState>();
  routes.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  routes.get('/readyz', async (ctx) => {
    try {
      await services.db.command({ ping: 1 });
      ctx.body = { status: 'ready' };
    } catch (err) {
      ctx.state.log.warn({ err }, 'database ping failed');
      ctx.status = 503;
      ctx.body = { status: 'unavailable', message: 'Database is not reachable' };
    }
  });
  routes.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = openapi;
  });
  routes.get('/metrics', async (ctx) => {
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  });
  routes.get('/v1/events/export', exportRoute(services, metrics));
  // The ledger is append-only: no interface changes or deletes an event.
  routes.register(['/v1/events', '/v1/events/:id'], ['PUT', 'PATCH', 'DELETE'], () => {
    throw new AppError('METHOD_NOT_ALLOWED', 'Events are append-only: they cannot be changed or deleted');
  });

  koa.use(requestContext(services.log, metrics));
  koa.use(errorHandling);
  koa.use(routes.routes());
  koa.use(docsPage());
  koa.use(trpcRoute(services));
  koa.use(restApi(services));
  return { koa, metrics };
}
