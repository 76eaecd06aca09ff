/** The usage meter's rules: how full the month is and what the dashboard should say about it. */
import { z } from 'zod';

/** The share of the cap at which the dashboard starts warning. */
export const USAGE_WARNING_RATIO = 0.8;

export const ZUsageState = z.enum(['ok', 'warning', 'exhausted']);
export type TUsageState = z.infer<typeof ZUsageState>;

export const ZUsageSummary = z.object({
  /** UTC month of receipt, `YYYY-MM`: the period the cap applies to. */
  month: z.string(),
  used: z.number().int(),
  cap: z.number().int(),
  state: ZUsageState,
  /** Events received per UTC day, the last 30 days, oldest first, today last. */
  daily: z.array(z.object({ date: z.string(), count: z.number().int() })),
});
export type TUsageSummary = z.infer<typeof ZUsageSummary>;

export function usageState(used: number, cap: number): TUsageState {
  if (used >= cap) return 'exhausted';
  return used >= cap * USAGE_WARNING_RATIO ? 'warning' : 'ok';
}

export const CHART_DAYS = 30;
const DAY_MS = 86_400_000;

/** The UTC day starts of the chart's days, oldest first, ending with the day of `now`. */
export function chartDays(now: Date, days = CHART_DAYS): Date[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: days }, (_, i) => new Date(today - (days - 1 - i) * DAY_MS));
}

export function nextDay(day: Date): Date {
  return new Date(day.getTime() + DAY_MS);
}
