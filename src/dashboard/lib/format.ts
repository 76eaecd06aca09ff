/**
 * Dates and numbers as people read them, written one way across the dashboard and the hosted viewer:
 * "Nov 26, 2026, 14:03:09" in the browser's time zone, "Nov 26, 2026" for a date alone, grouped digits.
 * Every page formats through these (no toLocaleString of its own), so a date reads the same everywhere.
 */
const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});
const dateOnly = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
const utcDay = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const numberFormat = new Intl.NumberFormat();

/** An instant (ISO 8601, epoch ms or a Date), local time with seconds. */
export function formatDateTime(at: string | number | Date): string {
  return dateTime.format(new Date(at));
}

/** An instant's local calendar date, without the time. */
export function formatDate(at: string | number | Date): string {
  return dateOnly.format(new Date(at));
}

/** A UTC calendar day given as YYYY-MM-DD (usage is counted in UTC days), as "Nov 26". */
export function formatUtcDay(day: string): string {
  return utcDay.format(new Date(`${day}T00:00:00Z`));
}

export function formatNumber(n: number): string {
  return numberFormat.format(n);
}

/** "1 event", "2 events", "1,204 entries": the count grouped, the noun agreeing (irregular plurals given). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatNumber(n)} ${n === 1 ? one : many}`;
}

/** "3 minutes ago" style, for last-used times. */
export function formatRelative(iso: string, now = Date.now()): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  const steps: [Intl.RelativeTimeFormatUnit, number][] = [
    ['year', 31_536_000],
    ['month', 2_592_000],
    ['day', 86_400],
    ['hour', 3_600],
    ['minute', 60],
  ];
  for (const [unit, size] of steps) if (Math.abs(seconds) >= size) return rtf.format(Math.round(seconds / size), unit);
  return rtf.format(seconds, 'second');
}

/** The browser's UTC offset as "UTC+01:00". */
export function utcOffsetLabel(at = new Date()): string {
  const minutes = -at.getTimezoneOffset();
  const sign = minutes >= 0 ? '+' : '-';
  const abs = Math.abs(minutes);
  return `UTC${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
