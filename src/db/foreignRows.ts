/**
 * Rows met without a valid MAC (db/rowMacs.ts): named (one log line at error level per row, however
 * often it is met), counted by kind (metric `ledger_foreign_rows_total`), and, where one takes a place
 * the service needs (a sequence number or an index it has not signed yet), moved aside into
 * `foreign_rows`: kept as evidence, out of the way, so that it never stalls an organization.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Collections } from './database';
import { type ForeignKind, isTombstone, type StoredEvent } from './documents';
import type { RowMac } from '../domain/ledger/rowMac';
import { isOwnStored } from './rowMacs';
import { describeDbError } from './errors';

/** Rows remembered as named already; past this many the memory starts again (a row may be named twice). */
const REMEMBERED = 10_000;

/** What names a row in a log line: its id, and its organization and number where it has them. */
interface Row {
  _id: string | number;
  tenant?: string;
  seq?: number;
}

export class ForeignRows {
  private readonly named = new Set<string>();
  /** Distinct foreign rows met by this process, by kind; and how many it moved aside. */
  readonly counts = { event: 0, tombstone: 0, entry: 0, outbox: 0, movedAside: 0 };

  constructor(
    private readonly c: Pick<Collections, 'foreignRows' | 'eventSlots' | 'ledgerEntries' | 'auditOutbox'>,
    private readonly log: Logger,
    /** The installation's row MACs; null where nothing is signed (no key file): every row is then taken as it is. */
    private readonly rowMac: RowMac | null = null,
  ) {}

  /** Whether a stored event or tombstone is the service's own (db/rowMacs.ts); a foreign one is named, as met by `where`. */
  own(doc: StoredEvent, where: string): boolean {
    if (!this.rowMac || isOwnStored(this.rowMac, doc)) return true;
    this.met(isTombstone(doc) ? 'tombstone' : 'event', doc, where);
    return false;
  }

  /** Names a foreign row met by `where`: logged and counted the first time. */
  met(kind: ForeignKind, row: Row, where: string): void {
    const key = `${kind}/${row.tenant ?? ''}/${row._id}/${row.seq ?? ''}`;
    if (this.named.has(key)) return;
    if (this.named.size >= REMEMBERED) this.named.clear();
    this.named.add(key);
    this.counts[kind]++;
    this.log.error({ kind, id: row._id, tenant: row.tenant, seq: row.seq, where }, `FOREIGN ${kind} row: no valid MAC, not written by this installation (written into the database behind its back, or damaged); never signed, delivered or taken as authority (run \`ledger audit\`)`);
  }

  /**
   * Moves a foreign event or tombstone out of the events collection (a copy into `foreign_rows` first,
   * then a delete of exactly that document: its id at its place). Returns whether it was removed.
   */
  async moveEventAside(row: StoredEvent, where: string): Promise<boolean> {
    const kind = isTombstone(row) ? 'tombstone' : 'event';
    this.met(kind, row, where);
    try {
      await this.c.foreignRows.insertOne({ _id: randomUUID(), kind, where, found_at: new Date(), row: { ...row } });
      // Exactly the row met (its MAC and salt too): never a row of the service's stored under the same id and
      // number meanwhile (another instance moved this one first, and an idempotent retry wrote its own).
      const { deletedCount } = await this.c.eventSlots.deleteOne({ _id: row._id, tenant: row.tenant, seq: row.seq, mac: row.mac ?? { $exists: false }, ...(isTombstone(row) ? {} : { salt: row.salt ?? { $exists: false } }) });
      if (deletedCount > 0) {
        this.counts.movedAside++;
        this.log.warn({ id: row._id, tenant: row.tenant, seq: row.seq, where }, 'foreign event row moved aside into foreign_rows: its sequence number is free for the service\'s own event');
      }
      return deletedCount > 0;
    } catch (error) {
      this.log.error({ id: row._id, tenant: row.tenant, error: describeDbError(error) }, 'could not move a foreign event row aside; tried again when next met');
      return false;
    }
  }
}
