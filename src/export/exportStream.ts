/**
 * Export bodies as streams: database cursor → transform → response, joined with `stream.pipeline` so
 * back-pressure holds memory flat and a client that goes away closes the database cursor.
 */
import { Transform as CsvTransform } from '@json2csv/node';
import { PassThrough, pipeline, Transform, type Readable } from 'node:stream';
import { CSV_COLUMNS } from '../domain/event';
import { toEvent, toEventJson, type EventDoc } from '../db/documents';
import { formatCsvCell } from './csvCell';

export type ExportFormat = 'json' | 'csv';

/** The response header that names the ledger tree an export is pinned to (events with seq ≤ it). */
export const LEDGER_TREE_SIZE_HEADER = 'Ledger-Tree-Size';

export const EXPORT_CONTENT = {
  json: { type: 'application/json; charset=utf-8', filename: 'audit_logs.json' },
  csv: { type: 'text/csv; charset=utf-8', filename: 'audit_logs.csv' },
} as const;

/** Writes a JSON array, one event per element, without holding more than one event at a time. */
function jsonArray(): Transform {
  let first = true;
  return new Transform({
    writableObjectMode: true,
    transform(doc: EventDoc, _encoding, done) {
      const prefix = first ? '[' : ',';
      first = false;
      done(null, prefix + toEventJson(doc));
    },
    flush(done) {
      done(null, first ? '[]' : ']');
    },
  });
}

type CsvRow = Record<(typeof CSV_COLUMNS)[number], string | undefined>;

function csvRows(): Transform {
  return new Transform({
    objectMode: true,
    transform(doc: EventDoc, _encoding, done) {
      const event = toEvent({ ...doc, metadata: '{}' });
      const row = {} as CsvRow;
      for (const column of CSV_COLUMNS) row[column] = event[column] ?? undefined;
      done(null, row);
    },
  });
}

function csvText(): CsvTransform<CsvRow, CsvRow> {
  return new CsvTransform<CsvRow, CsvRow>(
    {
      fields: [...CSV_COLUMNS],
      eol: '\r\n',
      defaultValue: '',
      // The header is the spec's column names as they are; every string cell goes through one formatter.
      formatters: { header: (name: string) => name, string: formatCsvCell },
    },
    {},
    { objectMode: true },
  );
}

export interface ExportHooks {
  onRow?: () => void;
  /** Called once, when the body has ended (no error), failed or been abandoned by the client. */
  onClose?: (error: Error | null | undefined) => void;
}

/**
 * The response body for an export of the given documents. If the source fails midway the body errors
 * too, so the client sees a broken transfer rather than a short file that looks complete.
 */
export function exportBody(source: Readable, format: ExportFormat, hooks: ExportHooks = {}): PassThrough {
  const out = new PassThrough();
  const counted = new Transform({
    objectMode: true,
    transform(doc: EventDoc, _encoding, done) {
      hooks.onRow?.();
      done(null, doc);
    },
  });
  const stages: Transform[] = format === 'json' ? [counted, jsonArray()] : [counted, csvRows(), csvText()];
  // pipeline destroys every stage, the cursor stream included, when any of them errors or closes early.
  pipeline([source, ...stages, out], (error) => hooks.onClose?.(error));
  return out;
}
