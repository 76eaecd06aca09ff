/**
 * The dashboard's session cookie: HttpOnly (scripts never see it), SameSite=Lax (browsers leave it off
 * cross-site POSTs), and Secure whenever the dashboard is served over HTTPS, where it is named with the
 * `__Host-` prefix: browsers then accept it only if Secure, from HTTPS, with Path=/ and no Domain, so no
 * sibling subdomain or plain-HTTP response can plant or overwrite it. Only /trpc and the dashboard's
 * export route read it; /v1 never does.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { SessionCookieJar } from '../trpc/context';

export const SESSION_COOKIE = 'al_session';
export const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;

function cookieName(secure: boolean): string {
  return secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE;
}

/** The session token a request carries under the name in use (`secure`: served over HTTPS), if any. */
export function readSessionToken(req: IncomingMessage, secure: boolean): string | undefined {
  const header = req.headers.cookie;
  return header ? parseCookie(header)[cookieName(secure)] : undefined;
}

/** Whether the request carries a session cookie under either name. */
export function hasSessionCookie(req: IncomingMessage): boolean {
  const header = req.headers.cookie;
  if (!header) return false;
  const cookies = parseCookie(header);
  return cookies[SESSION_COOKIE] !== undefined || cookies[SECURE_SESSION_COOKIE] !== undefined;
}

export function sessionCookieJar(req: IncomingMessage, res: ServerResponse, secure: boolean): SessionCookieJar {
  const name = cookieName(secure);
  const write = (value: string, expires: Date) =>
    res.appendHeader('Set-Cookie', stringifySetCookie({ name, value, expires, httpOnly: true, sameSite: 'lax', secure, path: '/' }));
  return {
    token: readSessionToken(req, secure),
    set: (value, expiresAt) => write(value, expiresAt),
    clear: () => write('', new Date(0)),
  };
}
