/** The dashboard's way into the export route: the session cookie, exactly as /trpc's session procedures read it. */
import type { Services } from '../services/container';
import type { ExportAuthenticator } from './exportRoute';
import { readSessionToken } from './sessionCookie';

/** `secureCookies`: whether the dashboard is served over HTTPS whatever the request says (PUBLIC_URL). */
export function sessionExportAuth(services: Services, secureCookies: boolean): ExportAuthenticator {
  return (ctx) => services.accounts.requireSession(readSessionToken(ctx.req, secureCookies || ctx.secure));
}
