/** How long to wait before the next try of a request that failed in a way worth retrying. */
export interface BackoffOptions {
  /** The first delay's ceiling (default 200 ms); each try doubles it. */
  initialMs?: number;
  /** The ceiling no delay goes above, whatever the tries (default 30 s). */
  maxMs?: number;
}

/**
 * "Full jitter" (a random delay up to an exponentially growing ceiling), so that clients cut off
 * together do not come back together; never shorter than the service's `Retry-After`.
 * `attempt` counts from 1; `random` is in [0, 1).
 */
export function retryDelayMs(attempt: number, retryAfterMs: number | null, options: BackoffOptions = {}, random: number = Math.random()): number {
  const initial = options.initialMs ?? 200;
  const max = options.maxMs ?? 30_000;
  const ceiling = Math.min(max, initial * 2 ** Math.min(attempt - 1, 30));
  return Math.max(retryAfterMs ?? 0, Math.round(ceiling * random));
}
