/**
 * The writer's side of the events collection (system-wide: a round holds many organizations' events):
 * an ordered insert that says exactly which prefix was stored and what stopped the rest, on MongoDB and on
 * FerretDB alike, and the point reads that find an organization's newest event.
 */
import { MongoBulkWriteError, MongoServerError, type WriteError } from 'mongodb';
import type { Logger } from 'pino';
import type { Collections } from './database';
import type { EventDoc } from './documents';
import type { ForeignRows } from './foreignRows';
import type { RowMac } from '../domain/ledger/rowMac';
import { isOwnStored } from './rowMacs';
import { describeDbError, DUPLICATE_KEY, isDatabaseUnreachable, isDuplicateKey } from './errors';

const WRITE_CONCERN = { w: 'majority', j: true } as const;
/**
 * The writer's newest position when the rows found end below the signed size (signed events deleted
 * behind the service's back: the log halts and the audit names them): the next number is the one after
 * the signed ones, never one of them again. Their months are taken for the newest found's, so the cap
 * counts them (it may count a few too many, never too few).
 */
function afterSigned(found: StoredPosition | null, signed: number): StoredPosition | null {
  if (signed === 0) return found;
  if (!found) return { seq: signed, month: '', monthSeq: 0 };
  return { seq: signed, month: found.month, monthSeq: found.monthSeq + (signed - found.seq) };
}

/** How an insert ended: how many documents (a prefix) were stored, and what stopped the rest. */
export type InsertOutcome =
  | { stored: number; stop?: undefined }
  /** A duplicate key: a lost sequence race, or an event stored already under its id. */
  | { stored: number; stop: 'duplicate' }
  /** The prefix is stored and nothing is wrong with the rest: it just was not written yet. */
  | { stored: number; stop: 'interrupted' }
  /** The database refused that one document (it never will take it). */
  | { stored: number; stop: 'refused'; code: unknown }
  /** Unreachable, or a write concern not met: what was stored is unknown. */
  | { stored: number; stop: 'unknown'; error: unknown };

/** Where an event sits in its tenant's sequence: what the newest-event search reads. */
export interface StoredPosition {
  seq: number;
  month: string;
  monthSeq: number;
}

export class EventInserts {
  constructor(
    private readonly c: Collections,
    private readonly log: Logger,
    /** Null where nothing is signed (no key file): every row is then taken as it is. */
    private readonly rowMac: RowMac | null = null,
    private readonly foreign: ForeignRows | null = null,
  ) {}

  /** Ordered insert: on the first failing document the database stops, so what was stored is a prefix. */
  async insertInOrder(docs: EventDoc[]): Promise<InsertOutcome> {
    try {
      await this.c.events.insertMany(docs, { ordered: true, writeConcern: WRITE_CONCERN });
      return { stored: docs.length };
    } catch (error) {
      if (isDatabaseUnreachable(error)) return { stored: 0, stop: 'unknown', error };
      if (error instanceof MongoBulkWriteError) {
        // A write concern not met leaves even the inserted prefix unconfirmed: acknowledge nothing.
        if (error.result.getWriteConcernError()) return { stored: 0, stop: 'unknown', error };
        const first: WriteError | undefined = [error.writeErrors].flat()[0];
        // FerretDB's duplicate-key message does not name the index: the writer tells a lost race from
        // an id stored already by looking the ids up.
        if (first) return first.code === DUPLICATE_KEY ? { stored: first.index, stop: 'duplicate' } : { stored: first.index, stop: 'refused', code: first.code };
      }
      if (isDuplicateKey(error)) return { stored: 0, stop: 'duplicate' };
      if (error instanceof MongoServerError) return this.reconcile(docs, error);
      return { stored: 0, stop: 'unknown', error };
    }
  }

  /**
   * After a server error that names no document, finds out what happened. FerretDB answers a document
   * that PostgreSQL refuses (a NUL in a string, say) this way, having stored the documents before it
   * while reporting none. What is stored is read back (our own ids), and the first event that is not
   * stored is tried once more on its own: only if it fails again, for a reason that is neither a lost
   * race nor an unreachable database, is it the one refused.
   */
  private async reconcile(docs: EventDoc[], error: MongoServerError): Promise<InsertOutcome> {
    try {
      const tenants = [...new Set(docs.map((doc) => doc.tenant))];
      const found = await this.c.events.find({ tenant: { $in: tenants }, _id: { $in: docs.map((doc) => doc._id) } }, { projection: { _id: 1, seq: 1 }, batchSize: docs.length }).toArray();
      // Stored by this insert only where the number is ours too: the same id at another number was
      // stored before (a retried event), which the duplicate path answers with the stored event.
      const storedAt = new Map(found.map((doc) => [doc._id, doc.seq]));
      let stored = 0;
      while (stored < docs.length && storedAt.get((docs[stored] as EventDoc)._id) === (docs[stored] as EventDoc).seq) stored++;
      const suspect = docs[stored];
      if (!suspect) return { stored };
      if (storedAt.has(suspect._id)) return { stored, stop: 'duplicate' };
      try {
        await this.c.events.insertOne(suspect, { writeConcern: WRITE_CONCERN });
        return stored + 1 < docs.length ? { stored: stored + 1, stop: 'interrupted' } : { stored: stored + 1 };
      } catch (again) {
        if (isDatabaseUnreachable(again)) return { stored, stop: 'unknown', error: again };
        if (isDuplicateKey(again)) return { stored, stop: 'duplicate' };
        return { stored, stop: 'refused', code: again instanceof MongoServerError ? again.code : undefined };
      }
    } catch (readError) {
      this.log.error({ error: describeDbError(readError) }, 'could not read back a failed insert');
      return { stored: 0, stop: 'unknown', error };
    }
  }

  /** The position of `tenant`'s event (or tombstone) at `seq`, or null when the number is free. A point read. */
  async at(tenant: string, seq: number): Promise<StoredPosition | null> {
    const doc = await this.c.eventSlots.findOne({ tenant, seq }, { projection: { _id: 0, seq: 1, month: 1, month_seq: 1 } });
    return doc ? { seq: doc.seq, month: doc.month, monthSeq: doc.month_seq } : null;
  }

  /**
   * `tenant`'s newest event (null: none). The sequence is gapless (a removed event leaves its tombstone
   * at its number, db/documents.ts), so "taken" holds for every number up to the newest and for none above it: gallop up from `taken`, a number known taken (0: none known),
   * until one is free, then bisect. O(log distance) point reads, each served by the (tenant, seq) index;
   * usually two, since the hint is the last number the writer saw. Never a sorted query.
   */
  async newest(tenant: string, taken: number, signed = 0): Promise<StoredPosition | null> {
    // `signed`: numbers a signed checkpoint covers (the newest the key signed, as far as authenticated rows
    // say: never the head document, which nothing authenticates) are given for good, whatever the database
    // holds there now.
    const found = await this.newestTaken(tenant, Math.max(taken, signed));
    if (!found || found.seq < signed) return afterSigned(found, signed);
    if (!this.rowMac || found.seq === signed) return found;
    // Past the signed numbers, the newest row must be the service's own. A foreign one (written behind its
    // back at the next number, or further on) is moved aside with every foreign row after the service's
    // newest own one, however many, and the search runs again below them.
    const doc = await this.c.eventSlots.findOne({ tenant, seq: found.seq });
    if (!doc || isOwnStored(this.rowMac, doc)) return found;
    await this.clearForeignTail(tenant, signed);
    return afterSigned(await this.newestTaken(tenant, signed), signed);
  }

  /**
   * Moves aside the foreign rows past the service's newest own event among those no checkpoint covers
   * (read in one query: a rare path, taken only once a foreign row was found newest). Foreign rows before
   * an own one stay: one of the service's events changed before it was signed, which halts the log.
   */
  private async clearForeignTail(tenant: string, signed: number): Promise<void> {
    const rows = await this.c.eventSlots.find({ tenant, seq: { $gt: signed } }).sort({ seq: 1 }).toArray();
    const own = rows.map((row) => !this.rowMac || isOwnStored(this.rowMac, row));
    const lastOwn = own.lastIndexOf(true);
    for (const [i, row] of rows.entries()) if (i > lastOwn) await this.foreign?.moveEventAside(row, 'the writer\'s newest-event search');
  }

  /** The newest number taken, by whatever row: gallop, then bisect. */
  private async newestTaken(tenant: string, taken: number): Promise<StoredPosition | null> {
    const [known, next] = await Promise.all([taken > 0 ? this.at(tenant, taken) : null, this.at(tenant, taken + 1)]);
    // The hint is gone (events deleted behind the service's back): start from nothing.
    if (taken > 0 && !known) return this.newestTaken(tenant, 0);
    let low = next ?? known;
    if (!low) return null;
    let free = low.seq + 1;
    for (let step = 2; next; step *= 2) {
      const found = await this.at(tenant, low.seq + step);
      if (!found) {
        free = low.seq + step;
        break;
      }
      low = found;
    }
    while (free - low.seq > 1) {
      const mid: number = low.seq + Math.floor((free - low.seq) / 2);
      const found = await this.at(tenant, mid);
      if (found) low = found;
      else free = mid;
    }
    return low;
  }
}
