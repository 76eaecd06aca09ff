/** The dashboard's way into the export route: the session cookie, exactly as /trpc's session procedures read it. */
import type { HttpServices } from '../services/container';
import type { ExportAuthenticator } from './exportRoute';
import { readSessionToken } from './sessionCookie';
import { requirePermission } from '../trpc/init';

/** `secureCookies`: whether the dashboard is served over HTTPS whatever the request says (PUBLIC_URL). */
export function sessionExportAuth(services: HttpServices, secureCookies: boolean): ExportAuthenticator {
  return async (ctx) => {
    const principal = await services.api.accounts.requireSession(readSessionToken(ctx.req, secureCookies || ctx.secure));
    requirePermission(principal, 'events:read');
    return principal;
  };
}
