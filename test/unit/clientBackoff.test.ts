/** The client package's retry delays (packages/client/src/backoff.ts): full jitter under a doubling ceiling, on top of Retry-After, at most an hour. */
import { MAX_RETRY_DELAY_MS, retryDelayMs } from '../../packages/client/src/backoff.ts';

test('the ceiling doubles with each try up to the maximum, and the delay is a random part of it', () => {
  const options = { initialMs: 100, maxMs: 1000 };
  expect([1, 2, 3, 4, 5, 6].map((attempt) => retryDelayMs(attempt, null, options, 0.999999))).toEqual([100, 200, 400, 800, 1000, 1000]);
  expect(retryDelayMs(3, null, options, 0)).toBe(0);
  expect(retryDelayMs(3, null, options, 0.5)).toBe(200);
  // No overflow however many tries.
  expect(retryDelayMs(10_000, null, options, 0.5)).toBe(500);
});

test('never sooner than the service asked, with jitter on top so that clients told the same do not come back together', () => {
  expect(retryDelayMs(1, 2000, { initialMs: 100, maxMs: 1000 }, 0.5)).toBe(2050);
  expect(retryDelayMs(1, 2000, { initialMs: 100, maxMs: 1000 }, 0)).toBe(2000);
});

test('at most an hour, whatever Retry-After says (a timer cannot wait past 24.8 days and fires at once instead)', () => {
  expect(retryDelayMs(1, 3_000_000_000, {}, 0.5)).toBe(MAX_RETRY_DELAY_MS);
  expect(MAX_RETRY_DELAY_MS).toBeLessThan(2 ** 31 - 1);
});
