/** The dashboard's way into the export route: the session cookie, exactly as /trpc's session procedures read it. */
import { AppError, ACCOUNT_MESSAGES } from '../domain/errors';
import type { Services } from '../services/container';
import type { ExportAuthenticator } from './exportRoute';
import { readSessionToken } from './sessionCookie';

export function sessionExportAuth(services: Services): ExportAuthenticator {
  return async (ctx) => {
    const principal = await services.accounts.authenticate(readSessionToken(ctx.req));
    if (!principal) throw new AppError('NOT_SIGNED_IN', ACCOUNT_MESSAGES.notSignedIn);
    return principal;
  };
}
