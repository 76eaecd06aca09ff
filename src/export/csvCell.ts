/** CSV cell formatting: RFC 4180 quoting plus neutralization of spreadsheet formulas. */
import { string as quotedString } from '@json2csv/formatters';

// A spreadsheet runs a cell starting with one of these as a formula (OWASP "CSV injection").
const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;
const quote = quotedString({ quote: '"', escapedQuote: '""' });

/** Prefixes `'` to formula-like text, then quotes the cell when RFC 4180 requires it. */
export function formatCsvCell(value: string): string {
  const safe = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(safe) ? quote(safe) : safe;
}
