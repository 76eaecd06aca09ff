/** How long to wait before the next try of a request that failed in a way worth retrying. */
export interface BackoffOptions {
  /** The first delay's ceiling (default 200 ms); each try doubles it. */
  initialMs?: number;
  /** The ceiling no delay goes above, whatever the tries (default 30 s). */
  maxMs?: number;
}

/** No wait is longer than this, whatever a `Retry-After` says (timers cannot wait past 2^31 ms, about 24.8 days). */
export const MAX_RETRY_DELAY_MS = 3_600_000;

/**
 * "Full jitter" (a random delay up to an exponentially growing ceiling) added to the service's
 * `Retry-After`: never sooner than it asked, and clients cut off together (every 503 says 2 s) do not
 * come back together. At most an hour. `attempt` counts from 1; `random` is in [0, 1).
 */
export function retryDelayMs(attempt: number, retryAfterMs: number | null, options: BackoffOptions = {}, random: number = Math.random()): number {
  const initial = options.initialMs ?? 200;
  const max = options.maxMs ?? 30_000;
  const ceiling = Math.min(max, initial * 2 ** Math.min(attempt - 1, 30));
  return Math.min(MAX_RETRY_DELAY_MS, (retryAfterMs ?? 0) + Math.round(ceiling * random));
}
