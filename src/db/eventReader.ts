/**
 * Reads one organization's events. The tenant is fixed at construction and added to every query here,
 * so no method can be called in a way that reaches another organization's data.
 */
import type { Filter, FindCursor } from 'mongodb';
import type { CursorPosition } from '../domain/cursor';
import { type EventDoc, LIVE, type StoredEvent } from './documents';
import type { ForeignRows } from './foreignRows';
import type { Collections } from './database';

/** Filters after parsing: range bounds are instants, both inclusive. */
export interface EventQuery {
  actor_id?: string | undefined;
  action?: string | undefined;
  /** Any of these actions (a viewer token's); `action`, when set, is one of them. */
  actions?: readonly string[] | undefined;
  resource_type?: string | undefined;
  resource_id?: string | undefined;
  organization_id?: string | undefined;
  start?: Date | undefined;
  end?: Date | undefined;
}

const NEWEST_FIRST = { ts: -1, _id: -1 } as const;

/** About the size of an event in a JSON response: its text fields and metadata plus the fixed part. */
function approximateJsonBytes(doc: EventDoc): number {
  let bytes = 256 + doc.metadata.length;
  for (const value of [doc.actor_id, doc.actor_name, doc.actor_email, doc.action, doc.resource_type, doc.resource_id, doc.resource_name, doc.organization_id]) {
    bytes += value?.length ?? 0;
  }
  return bytes;
}

export class EventReader {
  constructor(
    private readonly c: Collections,
    readonly tenant: string,
    /** Rows are shown only with a valid MAC (db/rowMacs.ts); null where nothing is signed (no key file). */
    private readonly foreign: ForeignRows | null = null,
  ) {}

  /**
   * Whether a stored row is the service's own: every read that answers a client, exports or replays goes
   * through this, so a row written into the database behind the service's back is never shown as an event.
   * A foreign row is named (db/foreignRows.ts).
   */
  isOwn(doc: StoredEvent): boolean {
    return this.foreign?.own(doc, 'a read') ?? true;
  }

  /** Builds the filter; values are plain strings and Dates, never client-supplied objects. */
  private filter(query: EventQuery, after?: CursorPosition): Filter<EventDoc> {
    const filter: Filter<EventDoc> = { tenant: this.tenant, ...LIVE };
    for (const field of ['actor_id', 'action', 'resource_type', 'resource_id', 'organization_id'] as const) {
      const value = query[field];
      if (value !== undefined) filter[field] = value;
    }
    if (query.actions && query.action === undefined) filter.action = { $in: [...query.actions] };
    if (query.start || query.end) {
      filter.ts = { ...(query.start && { $gte: query.start }), ...(query.end && { $lte: query.end }) };
    }
    if (after) {
      // Strictly after (ts, _id) in newest-first order: one key, so equal timestamps are not skipped.
      filter.$or = [{ ts: { $lt: after.timestamp } }, { ts: after.timestamp, _id: { $lt: after.id } }];
    }
    return filter;
  }

  /**
   * Events received in a UTC month, exactly: the newest event's place in its month (the sequence is
   * gapless; a removed event's tombstone keeps its place), or 0 when it belongs to an earlier month.
   */
  async receivedInMonth(month: string): Promise<number> {
    const newest = await this.c.eventSlots.findOne({ tenant: this.tenant }, { sort: { seq: -1 }, projection: { month: 1, month_seq: 1 } });
    return newest?.month === month ? newest.month_seq : 0;
  }

  /** Events received in [from, to). */
  async countReceived(from: Date, to: Date): Promise<number> {
    return this.c.events.countDocuments({ tenant: this.tenant, received_at: { $gte: from, $lt: to } });
  }

  async get(id: string): Promise<EventDoc | null> {
    const doc = await this.c.events.findOne({ _id: id, tenant: this.tenant, ...LIVE });
    return doc && this.isOwn(doc) ? doc : null;
  }

  /**
   * The newest sequence number given (0: none), a removed event's included: the sequence is gapless (a
   * removed event leaves its tombstone), so it is found by point reads
   * of sequence numbers (galloping, then bisecting: about 2·log2(n) of them), each served by the (tenant,
   * seq) index on both databases; FerretDB answers a sorted read by loading the whole organization.
   */
  async newestSeq(): Promise<number> {
    const taken = async (seq: number) => (await this.c.eventSlots.findOne({ tenant: this.tenant, seq }, { projection: { _id: 1 } })) !== null;
    if (!(await taken(1))) return 0;
    let low = 1;
    let step = 1;
    while (await taken(low + step)) {
      low += step;
      step *= 2;
    }
    let high = low + step;
    while (high - low > 1) {
      const mid = Math.floor((low + high) / 2);
      if (await taken(mid)) low = mid;
      else high = mid;
    }
    return low;
  }

  /**
   * Those of `ids` that are stored, by id: events, or the tombstones of those removed. These ids are the
   * service's own (a retried write's, an idempotency claim's): a foreign row under one of them is moved
   * aside (db/foreignRows.ts), so that the service's own event can be stored under it.
   */
  async getMany(ids: string[]): Promise<Map<string, StoredEvent>> {
    if (ids.length === 0) return new Map();
    // One id as an equality: FerretDB serves that from an index, but never an `$in` (MongoDB serves both).
    // One batch: a cursor left open holds one of FerretDB's PostgreSQL connections (src/domain/limited.ts).
    const found = await this.c.eventSlots.find({ _id: ids.length === 1 ? (ids[0] as string) : { $in: ids }, tenant: this.tenant }, { batchSize: ids.length }).toArray();
    const own = new Map<string, StoredEvent>();
    let signed: number | null = null;
    for (const doc of found) {
      if (this.isOwn(doc)) {
        own.set(doc._id, doc);
        continue;
      }
      // One at a signed number stays where it is (a signed event changed: the audit names it).
      signed ??= (await this.c.ledgerHeads.findOne({ _id: this.tenant }))?.size ?? 0;
      if (doc.seq > signed) await this.foreign?.moveEventAside(doc, 'a lookup by id');
    }
    return own;
  }

  /**
   * One page, newest first: up to `limit` rows, fewer when they would pass `maxBytes` as JSON (at least
   * one row, whatever its size). One row past the page says whether there is more. Rows are read in
   * small batches, so a page of large events never sits in memory more than once.
   */
  async page(query: EventQuery, bounds: { limit: number; maxBytes: number }, after?: CursorPosition): Promise<{ rows: EventDoc[]; hasMore: boolean }> {
    // No limit: a foreign row (db/rowMacs.ts) is skipped, and the page still fills from the rows after it;
    // the cursor is closed once it is full (one batch, as a limit would have read).
    const cursor = this.c.events
      .find(this.filter(query, after))
      .sort(NEWEST_FIRST)
      .batchSize(Math.min(bounds.limit + 1, 100));
    const rows: EventDoc[] = [];
    let bytes = 0;
    try {
      for await (const doc of cursor) {
        if (!this.isOwn(doc)) continue;
        bytes += approximateJsonBytes(doc);
        if (rows.length === bounds.limit || (rows.length > 0 && bytes > bounds.maxBytes)) return { rows, hasMore: true };
        rows.push(doc);
      }
    } finally {
      await cursor.close();
    }
    return { rows, hasMore: false };
  }

  /** Every matching event, newest first, as a database cursor for streaming. */
  stream(query: EventQuery): FindCursor<EventDoc> {
    return this.c.events.find(this.filter(query)).sort(NEWEST_FIRST).batchSize(1000);
  }
}
