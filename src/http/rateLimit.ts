/**
 * Requests per API key: a token bucket per key (`RATE_LIMIT_PER_SECOND`, `RATE_LIMIT_BURST`), checked
 * before anything else is done for the request, so a flood from one key costs the database nothing and
 * leaves capacity to every other key. Over the limit: 429 `RATE_LIMITED` with `Retry-After`. Every
 * response to a key-bearing request carries the IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers):
 * `RateLimit-Policy: "per-key";q=<burst>;w=<seconds to refill it>` and `RateLimit: "per-key";r=<left>;t=<seconds>`.
 * Buckets live in this process: with N instances behind a balancer a key gets up to N times the rate.
 */
import type { Middleware } from 'koa';
import type { Limits } from '../config/env';
import { bearerToken, hashApiKey, looksLikeApiKey } from '../domain/apiKey';
import { AppError } from '../domain/errors';
import type { AppState } from './appState';

/** Past this many buckets, full ones are dropped: a full bucket is the same as a new one. */
const MAX_BUCKETS = 100_000;

export interface RateVerdict {
  allowed: boolean;
  /** Whole requests left right now. */
  remaining: number;
  /** Seconds until the next request would be allowed (allowed: 0). */
  retryAfter: number;
  /** Seconds until the bucket is full again. */
  reset: number;
}

export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {}

  /** Takes one token from `id`'s bucket at time `nowMs`, if it has one. */
  take(id: string, nowMs: number): RateVerdict {
    const bucket = this.buckets.get(id);
    let tokens = this.available(id, nowMs);
    const allowed = tokens >= 1;
    if (allowed) tokens -= 1;
    if (!bucket && this.buckets.size >= MAX_BUCKETS) this.dropFull(nowMs);
    this.buckets.set(id, { tokens, at: nowMs });
    return {
      allowed,
      remaining: Math.floor(tokens),
      retryAfter: allowed ? 0 : Math.ceil((1 - tokens) / this.perSecond),
      reset: Math.ceil((this.burst - tokens) / this.perSecond),
    };
  }

  /** The tokens in `id`'s bucket at time `nowMs`, without taking one. */
  available(id: string, nowMs: number): number {
    const bucket = this.buckets.get(id);
    return bucket ? Math.min(this.burst, bucket.tokens + ((nowMs - bucket.at) / 1000) * this.perSecond) : this.burst;
  }

  private dropFull(nowMs: number): void {
    for (const [id, b] of this.buckets) {
      if (b.tokens + ((nowMs - b.at) / 1000) * this.perSecond >= this.burst) this.buckets.delete(id);
    }
  }
}

export function rateLimitPerApiKey(limits: Pick<Limits, 'ratePerSecond' | 'rateBurst'>, now: () => number = Date.now): Middleware<AppState> {
  const buckets = new TokenBuckets(limits.ratePerSecond, limits.rateBurst);
  const policy = `"per-key";q=${limits.rateBurst};w=${Math.max(1, Math.ceil(limits.rateBurst / limits.ratePerSecond))}`;
  return async (ctx, next) => {
    const token = bearerToken(ctx.get('authorization') || undefined);
    // Malformed tokens are refused without a database round, so they need no bucket.
    if (!token || !looksLikeApiKey(token)) {
      await next();
      return;
    }
    const verdict = buckets.take(hashApiKey(token), now());
    ctx.set('RateLimit-Policy', policy);
    ctx.set('RateLimit', `"per-key";r=${verdict.remaining};t=${verdict.allowed ? verdict.reset : verdict.retryAfter}`);
    if (!verdict.allowed) {
      throw new AppError(
        'RATE_LIMITED',
        `Too many requests for this API key (at most ${limits.ratePerSecond} per second, bursts of ${limits.rateBurst}); retry after ${verdict.retryAfter} s`,
        { retryAfter: verdict.retryAfter },
      );
    }
    await next();
  };
}
