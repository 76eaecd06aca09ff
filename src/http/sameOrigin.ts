/**
 * Refuses cross-site POSTs that would act with the dashboard's session (CSRF). SameSite=Lax already
 * keeps browsers from sending the cookie on them; this is the second, server-side lock, and it also
 * covers sign-in and sign-up, which have no cookie yet (login CSRF).
 *
 * A browser always says where a POST comes from (`Origin`, and `Sec-Fetch-Site` in current ones).
 * A request is left alone only when it is a script's: it carries `Authorization: Bearer alk_…` (a browser
 * cannot add that cross-site without CORS, which this service does not grant) and no session cookie, so
 * no header trick lets a cross-site request act with somebody's session.
 */
import type { Middleware } from 'koa';
import { AppError, ACCOUNT_MESSAGES } from '../domain/errors';
import type { AppState } from './appState';
import { bearerToken, looksLikeApiKey } from '../domain/apiKey';
import { hasSessionCookie } from './sessionCookie';

export function refuseCrossSitePosts(options: { prefixes: readonly string[]; publicUrl: string | undefined }): Middleware<AppState> {
  const publicOrigin = options.publicUrl ? new URL(options.publicUrl).origin : undefined;
  // Not async: it only passes the request on (or throws), and an async layer is two promises more per request.
  return (ctx, next) => {
    if (ctx.method !== 'POST' || !options.prefixes.some((p) => ctx.path.startsWith(p))) return next();
    const token = bearerToken(ctx.get('authorization') || undefined);
    if (token && looksLikeApiKey(token) && !hasSessionCookie(ctx.req)) return next();
    const origin = ctx.get('origin');
    const fetchSite = ctx.get('sec-fetch-site');
    const crossSite = origin ? !isOwnOrigin(origin, ctx.host, publicOrigin) : fetchSite === 'cross-site' || fetchSite === 'same-site';
    if (crossSite) {
      ctx.state.log.warn({ origin: origin || undefined, fetchSite: fetchSite || undefined }, 'cross-site POST refused');
      throw new AppError('CROSS_SITE_REQUEST', ACCOUNT_MESSAGES.crossSite);
    }
    return next();
  };
}

function isOwnOrigin(origin: string, host: string, publicOrigin: string | undefined): boolean {
  if (origin === publicOrigin) return true;
  try {
    return new URL(origin).host === host;
  } catch {
    // "null" (sandboxed frames, some redirects) or garbage: not ours.
    return false;
  }
}
