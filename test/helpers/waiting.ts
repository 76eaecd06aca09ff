/**
 * Every wait of the suites, in one place. A test waits for something observable with `eventually` (a
 * poll with a deadline of its own, failing with what it waited for); a timed pause is allowed only where
 * the time itself is the point, and then it is named and says why: `quietFor` (nothing may happen during
 * the interval) and `pace` (a loop that must not run flat out). No suite calls setTimeout to wait.
 */

/** Thrown by `eventually` when its deadline passes (so a probe's own error is told from a timeout). */
export class TimedOut extends Error {}

const pauseFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` every `everyMs` (100 ms) until it gives something truthy, and returns that; fails naming
 * `what` after `timeoutMs`. A probe that throws fails the wait at once; one without I/O may answer at once (no promise).
 */
export async function eventually<T>(what: string, probe: () => Promise<T | null | undefined | false> | T | null | undefined | false, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() - started > timeoutMs) throw new TimedOut(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await pauseFor(everyMs);
  }
}

/** Polls until `check` gives `expected` (a page updates asynchronously); fails with the last value seen. */
export async function eventuallyIs<T>(check: () => Promise<T>, expected: T, timeoutMs = 10_000): Promise<void> {
  let last: T | undefined;
  try {
    await eventually(String(expected), async () => (last = await check()) === expected, timeoutMs);
  } catch (error) {
    if (!(error instanceof TimedOut)) throw error;
    expect(last).toBe(expected);
  }
}

/** Calls `attempt` until it resolves, and returns that; after `timeoutMs` its last error fails the wait. */
export async function eventuallySucceeds<T>(what: string, attempt: () => Promise<T>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  let lastError: unknown;
  try {
    const result = await eventually(what, async () => {
      try {
        return { value: await attempt() };
      } catch (error) {
        lastError = error;
        return null;
      }
    }, timeoutMs, everyMs);
    return result.value;
  } catch (error) {
    if (error instanceof TimedOut && lastError !== undefined) throw new TimedOut(`${error.message}; the last attempt failed: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)}`, { cause: lastError });
    throw error;
  }
}

/**
 * Lets `ms` pass on purpose, for the reason `why` names: a test that shows nothing happens during an
 * interval (no delivery, no retry before its time), or one that lets a window of the service's own
 * clock pass (a rate limiter's second) where no injected clock reaches.
 */
export async function quietFor(ms: number, why: string): Promise<void> {
  if (!why) throw new Error('quietFor needs its reason');
  await pauseFor(ms);
}

/** Spaces the turns of a loop that runs beside a test (a steady writer, a health poll), so it does not run flat out; `why` says why this pace. */
export async function pace(ms: number, why: string): Promise<void> {
  if (!why) throw new Error('pace needs its reason');
  await pauseFor(ms);
}
