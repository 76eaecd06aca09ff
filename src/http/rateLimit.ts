/**
 * Requests per API key: a token bucket per key (`RATE_LIMIT_PER_SECOND`, `RATE_LIMIT_BURST`), checked
 * before anything else is done for the request, so a flood from one key costs the database nothing and
 * leaves capacity to every other key. Over the limit: 429 `RATE_LIMITED` with `Retry-After`. Every
 * response to a key-bearing request carries the IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers):
 * `RateLimit-Policy: "per-key";q=<burst>;w=<seconds to refill it>` and `RateLimit: "per-key";r=<left>;t=<seconds>`.
 * Buckets live in this process, each giving 1/N of the rate and the burst where N instances are live
 * (`share`), so a key gets the installation's limit from N instances together when the balancer
 * spreads its requests, with no shared counter and no database round trip. Tolerance: while an instance
 * joins or leaves (up to the 5 s it takes the others to see it) a key may get up to (N+1)/N of the
 * limit; behind a balancer that sends one key to one instance only, a key gets 1/N of it. The
 * RateLimit fields speak for the installation: this process's bucket times N.
 */
import type { Middleware } from 'koa';
import type { Limits } from '../config/env';
import { bearerToken, hashApiKey, looksLikeApiKey } from '../domain/apiKey';
import { AppError } from '../domain/errors';
import { TokenBuckets } from '../domain/tokenBuckets';
import type { AppState } from './appState';

export function rateLimitPerApiKey(limits: Pick<Limits, 'ratePerSecond' | 'rateBurst'>, share: () => number = () => 1, now: () => number = Date.now): Middleware<AppState> {
  const buckets = new TokenBuckets(limits.ratePerSecond, limits.rateBurst, share);
  const policy = `"per-key";q=${limits.rateBurst};w=${Math.max(1, Math.ceil(limits.rateBurst / limits.ratePerSecond))}`;
  // Not async: it only passes the request on (or throws), and an async layer is two promises more per request.
  return (ctx, next) => {
    const token = bearerToken(ctx.get('authorization') || undefined);
    // Malformed tokens are refused without a database round, so they need no bucket.
    if (!token || !looksLikeApiKey(token)) return next();
    const verdict = buckets.take(hashApiKey(token), now());
    ctx.set('RateLimit-Policy', policy);
    ctx.set('RateLimit', `"per-key";r=${Math.round(verdict.remaining / share())};t=${verdict.allowed ? verdict.reset : verdict.retryAfter}`);
    if (!verdict.allowed) {
      throw new AppError(
        'RATE_LIMITED',
        `Too many requests for this API key (at most ${limits.ratePerSecond} per second, bursts of ${limits.rateBurst}); retry after ${verdict.retryAfter} s`,
        { retryAfter: verdict.retryAfter },
      );
    }
    return next();
  };
}
