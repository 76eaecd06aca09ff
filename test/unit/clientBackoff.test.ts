/** The client package's retry delays (packages/client/src/backoff.ts): full jitter under a doubling ceiling, never below Retry-After. */
import { retryDelayMs } from '../../packages/client/src';

test('the ceiling doubles with each try up to the maximum, and the delay is a random part of it', () => {
  const options = { initialMs: 100, maxMs: 1000 };
  expect([1, 2, 3, 4, 5, 6].map((attempt) => retryDelayMs(attempt, null, options, 0.999999))).toEqual([100, 200, 400, 800, 1000, 1000]);
  expect(retryDelayMs(3, null, options, 0)).toBe(0);
  expect(retryDelayMs(3, null, options, 0.5)).toBe(200);
  // No overflow however many tries.
  expect(retryDelayMs(10_000, null, options, 0.5)).toBe(500);
});

test('never sooner than the service asked', () => {
  expect(retryDelayMs(1, 2000, { initialMs: 100, maxMs: 1000 }, 0.5)).toBe(2000);
  expect(retryDelayMs(20, 10, { initialMs: 100, maxMs: 1000 }, 0.5)).toBe(500);
});
