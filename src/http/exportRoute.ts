/**
 * GET /v1/events/export as a plain Koa route: trpc-to-openapi can only answer with one JSON value, and
 * an export must stream. It shadows the path for REST clients, authenticates like the procedures and
 * parses its query with the same schema (the list filters plus `format`). The dashboard's download
 * (`/session/events/export`) is the same route with the session as its way in.
 */
import type { Middleware, ParameterizedContext } from 'koa';
import { ZExportEventsInput } from '../domain/event';
import { REMOVED_EVENTS_HEADER, removedHeader } from '../domain/retention';
import { validationError } from '../domain/validation';
import { loggableError } from '../db/errors';
import { exportBody, EXPORT_CONTENT, LEDGER_TREE_SIZE_HEADER } from '../export/exportStream';
import type { Principal } from '../services/auth';
import type { HttpServices } from '../services/container';
import { authError, requireScope } from '../trpc/init';
import { bearerToken, type Scope } from '../domain/apiKey';
import type { AppState } from './appState';
import type { Metrics } from './metrics';

/** Who is exporting; throws the surface's own 401 when nobody is. */
export type ExportAuthenticator = (ctx: ParameterizedContext<AppState>) => Promise<Principal>;

/** /v1's way in: the API key in `Authorization`, with the scope the route needs. */
export function apiKeyExportAuth(services: HttpServices, scope: Scope): ExportAuthenticator {
  return async (ctx) => {
    const auth = await services.auth.authenticate(ctx.req.headers.authorization);
    if (auth.kind !== 'ok') throw authError(auth.kind, 'read');
    requireScope(auth.principal, scope);
    return auth.principal;
  };
}

/**
 * The hosted viewer's download (`/viewer/export`): its viewer token in `Authorization: Bearer` or, for a
 * plain download link, in `token` (taken out of the query before the filters are read).
 */
export function viewerExportAuth(services: HttpServices): ExportAuthenticator {
  return async (ctx) => {
    const { token, ...filters } = ctx.query;
    ctx.query = filters;
    return services.api.viewerTokens.verify(bearerToken(ctx.req.headers.authorization) ?? (typeof token === 'string' ? token : undefined));
  };
}

export function exportRoute(services: HttpServices, metrics: Metrics, authenticate: ExportAuthenticator): Middleware<AppState> {
  return async (ctx) => {
    const principal = await authenticate(ctx);
    const parsed = ZExportEventsInput.safeParse(ctx.query);
    if (!parsed.success) throw validationError(parsed.error.issues);
    const format = parsed.data.format ?? 'json';
    // Anything that fails here is answered with a JSON error: no byte of the body has been sent yet.
    const { tree_size: treeSize, ...filters } = parsed.data;
    const [{ docs, treeSize: pinned }, removed] = await Promise.all([
      services.api.events.export(principal, filters, treeSize),
      principal.kind === 'viewer' ? null : services.api.retention.notice(principal.tenant),
    ]);
    // On the organization's record before the first byte goes (services/selfAudit.ts).
    try {
      await services.selfAudit.exportRun(principal, format, filters, pinned);
    } catch (error) {
      docs.destroy();
      throw error;
    }

    metrics.exportStreams.inc();
    const body = exportBody(docs, format, {
      onRow: () => { metrics.exportRows.inc(); },
      onClose: (error) => {
        metrics.exportStreams.dec();
        // A client that goes away is not a failure; anything else cut the body short, which the
        // client sees as a broken transfer (Koa destroys the socket).
        if (error && (error as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') {
          metrics.exportFailures.inc();
          ctx.state.log.error({ ...loggableError(error), message: error.message }, 'export failed after its first byte');
        }
      },
    });

    ctx.status = 200;
    ctx.type = EXPORT_CONTENT[format].type;
    ctx.set('Content-Disposition', `attachment; filename="${EXPORT_CONTENT[format].filename}"`);
    ctx.set('Cache-Control', 'no-store');
    // The tree the export is pinned to: its events are those with a sequence number up to this.
    ctx.set(LEDGER_TREE_SIZE_HEADER, String(pinned));
    // Events removed from the log are not silently fewer rows: the header says how many, and why.
    if (removed) ctx.set(REMOVED_EVENTS_HEADER, removedHeader(removed));
    ctx.body = body;
  };
}
