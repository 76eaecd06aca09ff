/**
 * Group commit with exact monthly caps, in one lane per organization.
 *
 * Each organization (tenant) has a lane: its concurrent creates queue while one batch of them is being
 * written, and each batch is a single ordered `insertMany` with a journaled, majority write concern. No
 * caller is answered before the write that holds its event has been acknowledged. Lanes never wait for
 * each other and never share a write, so one tenant's volume, lost races or refused events can neither
 * fail nor hold up another tenant's events.
 *
 * Every event takes the next per-tenant sequence number (`seq`), and the unique index on (tenant, seq)
 * decides races: of two writers, in one process or several, claiming the same number, exactly one wins;
 * the other reloads the tenant's newest event and tries again. Because a number is only ever tried
 * right after its predecessor exists, the sequence has no gaps. The month of receipt and the position
 * within it (`month_seq`) follow from the predecessor, so the cap check `month_seq <= cap` is exact
 * without any atomic read-modify-write, which FerretDB does not provide (its findAndModify is not atomic).
 *
 * An ordered insert stops at the first document that fails, so what was stored is exactly a prefix of the
 * batch, and that prefix is acknowledged. What stopped it decides the rest:
 * - a duplicate sequence number (a lost race): the rest is numbered again and retried;
 * - the database refusing that one document: its caller alone gets 422, and the rest is retried;
 * - anything else (the database unreachable, a write concern not met): the outcome of the rest is
 *   unknown, so none of it is acknowledged; its callers get 503 and may retry.
 */
import { MongoBulkWriteError, MongoServerError, type WriteError } from 'mongodb';
import type { Logger } from 'pino';
import { AppError, MESSAGES } from '../domain/errors';
import { type Clock, utcMonth } from '../domain/time';
import type { EventDoc } from '../db/documents';
import type { ApiKeyRepository } from '../db/apiKeyRepository';
import type { Collections } from '../db/database';
import { describeDbError, isDatabaseUnreachable, UNAVAILABLE_RETRY_AFTER_S, unreachableDatabaseError } from '../db/errors';
import type { OrgRepository } from '../db/orgRepository';

/** An event ready to store, before the writer gives it its place in the tenant's sequence. */
export type EventDraft = Omit<EventDoc, 'seq' | 'month' | 'month_seq'>;

interface Head {
  seq: number;
  month: string;
  monthSeq: number;
}

interface Pending {
  draft: EventDraft;
  /** The hash of the API key that sent the event: checked again, for the whole batch, before the write. */
  keyHash: string;
  resolve: (doc: EventDoc) => void;
  reject: (error: unknown) => void;
}

interface Lane {
  tenant: string;
  queue: Pending[];
  flushing: Promise<void> | null;
  /** The tenant's newest stored event as far as this process knows; null: load it before writing. */
  head: Head | null;
  /** The cap refused an event in `month`: until `until` (ms), later creates are refused at the door. */
  capped: { month: string; until: number } | null;
}

/** How an insert ended: how many documents (a prefix) were stored, and what stopped the rest. */
type InsertOutcome =
  | { stored: number; stop?: undefined }
  | { stored: number; stop: 'race' }
  /** The prefix is stored and nothing is wrong with the rest: it just was not written yet. */
  | { stored: number; stop: 'interrupted' }
  | { stored: number; stop: 'refused'; code: unknown }
  | { stored: number; stop: 'unknown'; error: unknown };

/** The head of a tenant with no events yet. */
const NO_EVENTS: Head = { seq: 0, month: '', monthSeq: 0 };

const MAX_BATCH = 1000;
// Each retry follows a lost race, i.e. another writer's progress; past this many the caller gets a 503.
const MAX_ATTEMPTS = 50;
// FerretDB's duplicate-key message does not name the index, so any duplicate is taken for a lost
// sequence race: event ids are UUIDv7 made here, and (tenant, seq) is the only other unique key.
const DUPLICATE_KEY = 11000;
const WRITE_CONCERN = { w: 'majority', j: true } as const;
/**
 * How long a tenant found at its cap is refused without a database round. Caps only fall within a
 * month, so the only thing this delays is a cap raised by an operator: it applies within this time.
 */
const CAP_RECHECK_MS = 10_000;
/** Lanes kept for their cached heads; past this many, idle ones are dropped (their heads reload). */
const MAX_IDLE_LANES = 10_000;

export interface WriterStats {
  batches: number;
  events: number;
  conflicts: number;
  refused: number;
}

/** The 429 of a used-up cap, with the seconds until the next UTC month begins. */
function capReached(now: Date): AppError {
  const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return new AppError('MONTHLY_LIMIT_REACHED', MESSAGES.monthlyLimitReached, { retryAfter: Math.ceil((nextMonth - now.getTime()) / 1000) });
}

export class EventWriter {
  private readonly lanes = new Map<string, Lane>();
  readonly stats: WriterStats = { batches: 0, events: 0, conflicts: 0, refused: 0 };

  constructor(
    private readonly c: Collections,
    private readonly orgs: OrgRepository,
    private readonly keys: ApiKeyRepository,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Told about keys found revoked at commit, so authentication stops trusting them at once. */
    private readonly onInactiveKey: (hash: string) => void = () => undefined,
  ) {}

  /**
   * Stores one event; resolves once it is durable. Rejects with 429 when the tenant's cap is used up,
   * with 401 when the key has been revoked since the request was authenticated, with 422 when the
   * database refuses the event itself and with 503 when the write could not be confirmed.
   */
  write(draft: EventDraft, keyHash: string): Promise<EventDoc> {
    const lane = this.lane(draft.tenant);
    const now = this.clock.now();
    if (lane.capped && lane.capped.month === utcMonth(now) && now.getTime() < lane.capped.until) {
      return Promise.reject(capReached(now));
    }
    return new Promise<EventDoc>((resolve, reject) => {
      lane.queue.push({ draft, keyHash, resolve, reject });
      lane.flushing ??= this.drain(lane).finally(() => {
        lane.flushing = null;
      });
    });
  }

  /** Resolves when everything queued so far, in every lane, has been written or refused. */
  async idle(): Promise<void> {
    for (;;) {
      const busy = [...this.lanes.values()].flatMap((lane) => (lane.flushing ? [lane.flushing] : []));
      if (busy.length === 0) return;
      await Promise.all(busy);
    }
  }

  private lane(tenant: string): Lane {
    let lane = this.lanes.get(tenant);
    if (!lane) {
      if (this.lanes.size >= MAX_IDLE_LANES) {
        for (const [key, idle] of this.lanes) if (!idle.flushing) this.lanes.delete(key);
      }
      lane = { tenant, queue: [], flushing: null, head: null, capped: null };
      this.lanes.set(tenant, lane);
    }
    return lane;
  }

  private async drain(lane: Lane): Promise<void> {
    while (lane.queue.length) {
      const batch = lane.queue.splice(0, MAX_BATCH);
      try {
        await this.commit(lane, batch);
      } catch (error) {
        // A read before the insert failed (caps, keys, head): nothing of this batch was written.
        lane.head = null;
        this.log.error({ tenant: lane.tenant, error: describeDbError(error) }, 'group commit failed before writing');
        for (const p of batch) p.reject(error);
      }
    }
  }

  private async loadHead(tenant: string): Promise<Head> {
    const last = await this.c.events.findOne({ tenant }, { sort: { seq: -1 }, projection: { seq: 1, month: 1, month_seq: 1 } });
    return last ? { seq: last.seq, month: last.month, monthSeq: last.month_seq } : NO_EVENTS;
  }

  private async commit(lane: Lane, batch: Pending[]): Promise<void> {
    const { tenant } = lane;
    let pending = batch;
    for (let races = 0; pending.length > 0 && races < MAX_ATTEMPTS; ) {
      const hashes = [...new Set(pending.map((p) => p.keyHash))];
      const [caps, activeKeys, head] = await Promise.all([this.orgs.caps([tenant]), this.keys.activeAmong(hashes), lane.head ?? this.loadHead(tenant)]);
      const cap = caps.get(tenant) ?? 0;
      const now = this.clock.now();
      const receiptMonth = utcMonth(now);

      // Give each event its place, each after the one before.
      const places: Head[] = [];
      const docs: EventDoc[] = [];
      const owners: Pending[] = [];
      let last = head;
      for (const p of pending) {
        if (!activeKeys.has(p.keyHash)) {
          this.onInactiveKey(p.keyHash);
          p.reject(new AppError('INVALID_API_KEY', MESSAGES.invalidApiKey));
          continue;
        }
        // Months never go backwards along the sequence, even if this process's clock lags another's.
        const month = last.month > receiptMonth ? last.month : receiptMonth;
        const monthSeq = last.month === month ? last.monthSeq + 1 : 1;
        if (monthSeq > cap) {
          lane.capped = { month, until: now.getTime() + CAP_RECHECK_MS };
          p.reject(capReached(now));
          continue;
        }
        last = { seq: last.seq + 1, month, monthSeq };
        places.push(last);
        docs.push({ ...p.draft, seq: last.seq, month, month_seq: monthSeq });
        owners.push(p);
      }
      if (docs.length === 0) return;

      const outcome = await this.insert(docs);
      this.stats.batches++;
      this.stats.events += outcome.stored;
      owners.slice(0, outcome.stored).forEach((p, i) => { p.resolve(docs[i] as EventDoc); });
      // The newest event stored by this batch, exactly; or the head it started from.
      const storedHead = places[outcome.stored - 1] ?? head;

      if (outcome.stop === undefined) {
        lane.head = storedHead;
        return;
      }
      if (outcome.stop === 'interrupted') {
        lane.head = storedHead;
        pending = owners.slice(outcome.stored);
        continue;
      }
      if (outcome.stop === 'race') {
        lane.head = null;
        this.stats.conflicts++;
        races++;
        pending = owners.slice(outcome.stored);
        continue;
      }
      if (outcome.stop === 'refused') {
        // That one event is not stored and never will be; the numbers after it are free again.
        lane.head = storedHead;
        this.stats.refused++;
        this.log.warn({ tenant, code: outcome.code, index: outcome.stored }, 'the event store refused an event');
        owners[outcome.stored]?.reject(new AppError('EVENT_REFUSED', MESSAGES.eventRefused));
        pending = owners.slice(outcome.stored + 1);
        continue;
      }
      lane.head = null;
      const rest = owners.slice(outcome.stored);
      this.log.error({ tenant, events: rest.length, error: describeDbError(outcome.error) }, 'event insert not confirmed');
      const failure =
        unreachableDatabaseError(outcome.error) ??
        new AppError('SERVICE_UNAVAILABLE', MESSAGES.writeUnconfirmed, { retryAfter: UNAVAILABLE_RETRY_AFTER_S }, { cause: outcome.error });
      for (const p of rest) p.reject(failure);
      return;
    }
    for (const p of pending) {
      p.reject(new AppError('SERVICE_UNAVAILABLE', 'Too many concurrent writers for this organization; retry', { retryAfter: 1 }));
    }
  }

  /** Ordered insert: on the first failing document the database stops, so what was stored is a prefix. */
  private async insert(docs: EventDoc[]): Promise<InsertOutcome> {
    try {
      await this.c.events.insertMany(docs, { ordered: true, writeConcern: WRITE_CONCERN });
      return { stored: docs.length };
    } catch (error) {
      if (isDatabaseUnreachable(error)) return { stored: 0, stop: 'unknown', error };
      if (error instanceof MongoBulkWriteError) {
        // A write concern not met leaves even the inserted prefix unconfirmed: acknowledge nothing.
        if (error.result.getWriteConcernError()) return { stored: 0, stop: 'unknown', error };
        const first: WriteError | undefined = Array.isArray(error.writeErrors) ? (error.writeErrors as WriteError[])[0] : (error.writeErrors as WriteError | undefined);
        if (first) return first.code === DUPLICATE_KEY ? { stored: first.index, stop: 'race' } : { stored: first.index, stop: 'refused', code: first.code };
      }
      if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) return { stored: 0, stop: 'race' };
      if (error instanceof MongoServerError) return this.reconcile(docs, error);
      return { stored: 0, stop: 'unknown', error };
    }
  }

  /**
   * After a server error that names no document, finds out what happened. FerretDB answers a document
   * that PostgreSQL refuses (a NUL in a string, say) this way, having stored the documents before it
   * while reporting none. What is stored is read back (our ids at our sequence numbers), and the first
   * event that is not stored is tried once more on its own: only if it fails again, for a reason that is
   * neither a lost race nor an unreachable database, is it the one refused.
   */
  private async reconcile(docs: EventDoc[], error: MongoServerError): Promise<InsertOutcome> {
    const first = docs[0] as EventDoc;
    try {
      const found = await this.c.events
        .find({ tenant: first.tenant, seq: { $gte: first.seq, $lte: first.seq + docs.length - 1 } }, { projection: { _id: 1, seq: 1 } })
        .toArray();
      const holder = new Map(found.map((doc) => [doc.seq, doc._id]));
      let stored = 0;
      while (stored < docs.length && holder.get((docs[stored] as EventDoc).seq) === (docs[stored] as EventDoc)._id) stored++;
      const suspect = docs[stored];
      if (!suspect) return { stored };
      if (holder.has(suspect.seq)) return { stored, stop: 'race' };
      try {
        await this.c.events.insertOne(suspect, { writeConcern: WRITE_CONCERN });
        return stored + 1 < docs.length ? { stored: stored + 1, stop: 'interrupted' } : { stored: stored + 1 };
      } catch (again) {
        if (isDatabaseUnreachable(again)) return { stored, stop: 'unknown', error: again };
        if (again instanceof MongoServerError && again.code === DUPLICATE_KEY) return { stored, stop: 'race' };
        return { stored, stop: 'refused', code: again instanceof MongoServerError ? again.code : undefined };
      }
    } catch (readError) {
      this.log.error({ error: describeDbError(readError) }, 'could not read back a failed insert');
      return { stored: 0, stop: 'unknown', error };
    }
  }
}
