/**
 * Keyset cursors over the list order (timestamp desc, id desc). The pair is one key: the next page
 * starts strictly after (timestamp, id), so equal timestamps neither repeat nor skip rows.
 * Opaque to clients: base64url of a small JSON document. Only what `encodeCursor` can produce decodes.
 */
import { AppError } from './errors';
import { isEventId } from './event';

// The instants a Date can hold; beyond them `new Date(t)` is invalid and no query should see it.
const MAX_TIME_MS = 8.64e15;

export interface CursorPosition {
  timestamp: Date;
  id: string;
}

export function encodeCursor(position: CursorPosition): string {
  return Buffer.from(JSON.stringify({ t: position.timestamp.getTime(), i: position.id })).toString('base64url');
}

export function decodeCursor(cursor: string): CursorPosition {
  try {
    const raw: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (typeof raw === 'object' && raw !== null && 't' in raw && 'i' in raw) {
      const { t, i } = raw;
      if (typeof t === 'number' && Math.abs(t) <= MAX_TIME_MS && typeof i === 'string' && isEventId(i)) {
        return { timestamp: new Date(t), id: i };
      }
    }
  } catch {
    // fall through: any undecodable cursor gets the same answer
  }
  throw new AppError('INVALID_CURSOR', 'Invalid request: cursor is not valid; pass next_cursor from the previous page unchanged', { fields: ['cursor'] });
}
