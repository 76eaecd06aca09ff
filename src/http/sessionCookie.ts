/**
 * The dashboard's session cookie: HttpOnly (scripts never see it), SameSite=Lax (browsers leave it off
 * cross-site POSTs), Secure whenever the dashboard is served over HTTPS. Only /trpc and the dashboard's
 * export route read it; /v1 never does.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseCookie, stringifySetCookie } from 'cookie';

export const SESSION_COOKIE = 'al_session';

export interface SessionCookieJar {
  /** The session token the request carries, if any. */
  token: string | undefined;
  set(token: string, expiresAt: Date): void;
  clear(): void;
}

/** The session token a request carries, if any. */
export function readSessionToken(req: IncomingMessage): string | undefined {
  const header = req.headers.cookie;
  return header ? parseCookie(header)[SESSION_COOKIE] : undefined;
}

export function sessionCookieJar(req: IncomingMessage, res: ServerResponse, secure: boolean): SessionCookieJar {
  const token = readSessionToken(req);
  const write = (value: string, expires: Date) =>
    res.appendHeader('Set-Cookie', stringifySetCookie({ name: SESSION_COOKIE, value, expires, httpOnly: true, sameSite: 'lax', secure, path: '/' }));
  return {
    token,
    set: (value, expiresAt) => write(value, expiresAt),
    clear: () => write('', new Date(0)),
  };
}
