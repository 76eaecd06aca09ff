/**
 * Parsing of the two time formats clients send: ISO 8601 datetimes (event timestamps, range bounds)
 * and calendar dates (range bounds). Strict on purpose: `2024-02-30` is rejected rather than rolled
 * over to March, which is what `new Date()` would silently do.
 */

const DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2}):?(\d{2}))$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

function validDate(y: number, m: number, d: number): boolean {
  return y >= 1 && m >= 1 && m <= 12 && d >= 1 && d <= daysInMonth(y, m);
}

function utcMs(y: number, m: number, d: number, h = 0, mi = 0, s = 0, ms = 0): number {
  // Date.UTC maps years 0..99 to 1900..1999; setUTCFullYear does not.
  const date = new Date(Date.UTC(2000, m - 1, d, h, mi, s, ms));
  date.setUTCFullYear(y);
  return date.getTime();
}

// The instants whose ISO form keeps the four-digit year that every client can parse.
const MIN_MS = utcMs(1, 1, 1);
const MAX_MS = utcMs(9999, 12, 31, 23, 59, 59, 999);

/** Parses an ISO 8601 datetime with a UTC designator or offset; null when malformed or impossible. */
export function parseIsoDateTime(text: string): Date | null {
  const m = DATETIME.exec(text);
  if (!m) return null;
  const [y, mo, d, h, mi] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const s = m[6] === undefined ? 0 : Number(m[6]);
  // Millisecond precision: finer digits are truncated, never rounded into the next second.
  const ms = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0').slice(0, 3));
  if (!validDate(y, mo, d) || h > 23 || mi > 59 || s > 59) return null;
  let offsetMin = 0;
  if (m[8] !== 'Z') {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offsetMin = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const t = utcMs(y, mo, d, h, mi, s, ms) - offsetMin * 60_000;
  return t < MIN_MS || t > MAX_MS ? null : new Date(t);
}

/** Parses `YYYY-MM-DD` as that day's first millisecond in UTC; null when impossible. */
export function parseIsoDate(text: string): Date | null {
  const m = DATE.exec(text);
  if (!m) return null;
  const [y, mo, d] = [m[1], m[2], m[3]].map(Number) as [number, number, number];
  return validDate(y, mo, d) ? new Date(utcMs(y, mo, d)) : null;
}

const DAY_MS = 86_400_000;

/** A range bound: a datetime is taken as is; a date-only upper bound covers that whole UTC day. */
export function parseRangeBound(text: string, bound: 'start' | 'end'): Date | null {
  const datetime = parseIsoDateTime(text);
  if (datetime) return datetime;
  const date = parseIsoDate(text);
  if (!date) return null;
  return bound === 'end' ? new Date(date.getTime() + DAY_MS - 1) : date;
}

/** The UTC calendar month of an instant as `YYYY-MM`, the unit of the monthly cap. */
export function utcMonth(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/** Something that tells the time; injected so tests can move the clock across a month boundary. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
