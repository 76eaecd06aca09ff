/** The dashboard's way into the export route: the session cookie, exactly as /trpc's session procedures read it. */
import type { Services } from '../services/container';
import type { ExportAuthenticator } from './exportRoute';
import { readSessionToken } from './sessionCookie';

export function sessionExportAuth(services: Services): ExportAuthenticator {
  return (ctx) => services.accounts.requireSession(readSessionToken(ctx.req));
}
