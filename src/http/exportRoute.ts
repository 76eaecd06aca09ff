/**
 * GET /v1/events/export as a plain Koa route: trpc-to-openapi can only answer with one JSON value, and
 * an export must stream. It shadows the path for REST clients, authenticates like the procedures and
 * parses its query with the same schema (the list filters plus `format`).
 */
import type { Middleware } from 'koa';
import { ZExportEventsInput } from '../domain/event';
import { validationError } from '../domain/validation';
import { exportBody, EXPORT_CONTENT } from '../export/exportStream';
import type { Services } from '../services/container';
import { toEventQuery } from '../services/events';
import { authError } from '../trpc/init';
import type { AppState } from './appState';
import type { Metrics } from './metrics';

export function exportRoute(services: Services, metrics: Metrics): Middleware<AppState> {
  return async (ctx) => {
    const auth = await services.auth.authenticate(ctx.req.headers.authorization);
    if (auth.kind !== 'ok') throw authError(auth.kind, 'read');
    const parsed = ZExportEventsInput.safeParse(ctx.query);
    if (!parsed.success) throw validationError(parsed.error.issues);
    const format = parsed.data.format ?? 'json';
    const query = toEventQuery(parsed.data);

    const cursor = services.events.readerFor(auth.principal).stream(query);
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
