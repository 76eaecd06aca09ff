/**
 * What a request may cost before anyone knows who sent it.
 *
 * - Bodies: a request to /v1 or /trpc whose body is larger than STRANGER_BODY_BYTES (64 KiB), of unknown
 *   length or compressed, is read only once its API key (or, on /trpc, its dashboard session) is known good;
 *   the large limits (BATCH_MAX_BYTES) are for known callers. A stranger's large request is answered at
 *   once (/v1: its 401; /trpc: 413) without reading the body, and the connection is closed after it.
 * - Failed authentications are counted per client address (IPv6 per /64) in a token bucket
 *   (AUTH_FAILURES_PER_SECOND, AUTH_FAILURES_BURST): an address past it is refused with 429 before any
 *   key or session is looked up, so guessing keys or sessions costs the database nothing.
 */
import type { Middleware, ParameterizedContext } from 'koa';
import type { Limits } from '../config/env';
import { AppError } from '../domain/errors';
import type { HttpServices } from '../services/container';
import { authError } from '../trpc/init';
import { toAppError } from '../trpc/errors';
import type { AppState } from './appState';
import { throttleAddress } from './clientAddress';
import { TokenBuckets } from '../domain/tokenBuckets';
import { isCompressed } from './jsonBody';
import { hasSessionCookie, readSessionToken } from './sessionCookie';

export const STRANGER_BODY_BYTES = 64 * 1024;

type Surface = 'rest' | 'trpc';

function surfaceOf(path: string): Surface | null {
  if (path.startsWith('/v1/')) return 'rest';
  if (path.startsWith('/trpc/')) return 'trpc';
  return null;
}

/**
 * Whether the request has a body larger than strangers may send, or one whose size is unknown until it is
 * read: of unknown length, or compressed (Content-Length counts it compressed: 5 KB of gzip can hold a
 * 5 MiB batch, which the body reader would inflate and parse before the key is looked at).
 */
function largeBody(ctx: ParameterizedContext<AppState>): boolean {
  if (isCompressed(ctx)) return true;
  const length = ctx.get('content-length');
  if (length) return Number(length) > STRANGER_BODY_BYTES;
  return Boolean(ctx.get('transfer-encoding'));
}

export function admitStrangers(services: HttpServices, limits: Pick<Limits, 'authFailuresPerSecond' | 'authFailuresBurst'>, secureCookies: boolean, now: () => number = Date.now): Middleware<AppState> {
  // Measured on `now` (HttpOptions.rateNow: the wall clock unless a test gives its own), as the per-key limit.
  const failures = new TokenBuckets(limits.authFailuresPerSecond, limits.authFailuresBurst);

  /** Whether the caller's credentials are good: an API key on either surface, a session on /trpc. */
  async function known(ctx: ParameterizedContext<AppState>, surface: Surface): Promise<AppError | null> {
    const header = ctx.get('authorization');
    if (header || surface === 'rest') {
      const auth = await services.auth.authenticate(header || undefined, 'write');
      return auth.kind === 'ok' ? null : authError(auth.kind, 'write');
    }
    const session = await services.api.accounts.authenticate(readSessionToken(ctx.req, secureCookies || ctx.secure));
    return session ? null : new AppError('PAYLOAD_TOO_LARGE', `Request body exceeds the ${STRANGER_BODY_BYTES / 1024} KiB allowed before signing in`);
  }

  /** Counts a failed authentication against the address, when the request carried credentials. */
  const countFailure = (address: string, credentials: boolean): void => {
    if (credentials) failures.take(address, now());
  };

  return async (ctx, next) => {
    const surface = surfaceOf(ctx.path);
    if (!surface) {
      await next();
      return;
    }
    const address = throttleAddress(ctx.ip);
    const credentials = Boolean(ctx.get('authorization')) || (surface === 'trpc' && hasSessionCookie(ctx.req));
    if (credentials && failures.available(address, now()) < 1) {
      const retryAfter = Math.max(1, Math.ceil(1 / limits.authFailuresPerSecond));
      throw new AppError('RATE_LIMITED', `Too many failed authentications from this address; retry after ${retryAfter} s`, { retryAfter });
    }
    if (['POST', 'PUT', 'PATCH'].includes(ctx.method) && largeBody(ctx)) {
      const refusal = await known(ctx, surface);
      if (refusal) {
        if (refusal.status === 401) countFailure(address, credentials);
        // The body is not read: closing the connection after the answer spares reading the rest of it.
        ctx.set('Connection', 'close');
        throw refusal;
      }
    }
    try {
      await next();
    } catch (error) {
      if (toAppError(error).status === 401) countFailure(address, credentials);
      throw error;
    }
    // /trpc writes its answers itself.
    if (ctx.res.statusCode === 401) countFailure(address, credentials);
  };
}
