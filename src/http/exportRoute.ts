/**
 * GET /v1/events/export as a plain Koa route: trpc-to-openapi can only answer with one JSON value, and
 * an export must stream. It shadows the path for REST clients, authenticates like the procedures and
 * parses its query with the same schema (the list filters plus `format`). The dashboard's download
 * (`/session/events/export`) is the same route with the session as its way in.
 */
import type { Middleware, ParameterizedContext } from 'koa';
import { ZExportEventsInput } from '../domain/event';
import { validationError } from '../domain/validation';
import { exportBody, EXPORT_CONTENT } from '../export/exportStream';
import type { Principal } from '../services/auth';
import type { Services } from '../services/container';
import { toEventQuery } from '../services/events';
import { authError } from '../trpc/init';
import type { AppState } from './appState';
import type { Metrics } from './metrics';

/** Who is exporting; throws the surface's own 401 when nobody is. */
export type ExportAuthenticator = (ctx: ParameterizedContext<AppState>) => Promise<Principal>;

/** /v1's way in: the API key in `Authorization`. */
export function apiKeyExportAuth(services: Services): ExportAuthenticator {
  return async (ctx) => {
    const auth = await services.auth.authenticate(ctx.req.headers.authorization);
    if (auth.kind !== 'ok') throw authError(auth.kind, 'read');
    return auth.principal;
  };
}

export function exportRoute(services: Services, metrics: Metrics, authenticate: ExportAuthenticator): Middleware<AppState> {
  return async (ctx) => {
    const principal = await authenticate(ctx);
    const parsed = ZExportEventsInput.safeParse(ctx.query);
    if (!parsed.success) throw validationError(parsed.error.issues);
    const format = parsed.data.format ?? 'json';
    const query = toEventQuery(parsed.data);

    const cursor = services.events.readerFor(principal).stream(query);
    metrics.exportStreams.inc();
    const body = exportBody(cursor.stream(), format, {
      onRow: () => metrics.exportRows.inc(),
      onClose: () => {
        metrics.exportStreams.dec();
        void cursor.close().catch(() => undefined);
      },
    });

    ctx.status = 200;
    ctx.type = EXPORT_CONTENT[format].type;
    ctx.set('Content-Disposition', `attachment; filename="${EXPORT_CONTENT[format].filename}"`);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = body;
  };
}
