/** Token buckets by id: the per-key, per-session and per-address rate limits. */
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

  /**
   * `share`: the part of the rate and the burst this process may give (default all of it). With N
   * instances behind a balancer, 1/N of each keeps a key at the installation's limit without any
   * shared counter: the balancer spreads a key's requests, and so its buckets.
   */
  constructor(
    private readonly fullPerSecond: number,
    private readonly fullBurst: number,
    private readonly share: () => number = () => 1,
  ) {}

  private get perSecond(): number {
    return this.fullPerSecond * this.share();
  }

  private get burst(): number {
    return Math.max(1, this.fullBurst * this.share());
  }

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
