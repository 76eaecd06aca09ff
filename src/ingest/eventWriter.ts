/**
 * Group commit with exact monthly caps.
 *
 * Concurrent creates are queued and written together: while one batch is being written, the next one
 * gathers, and each batch is a single ordered `insertMany` with a journaled write concern. No caller is
 * answered before the write that holds its event has been acknowledged by the database.
 *
 * Every event takes the next per-tenant sequence number (`seq`), and the unique index on (tenant, seq)
 * decides races: of two writers, in one process or several, claiming the same number, exactly one wins;
 * the other reloads the tenant's newest event and tries again. Because a number is only ever tried
 * right after its predecessor exists, the sequence has no gaps. The month of receipt and the position
 * within it (`month_seq`) follow from the predecessor, so the cap check `month_seq <= cap` is exact
 * without any atomic read-modify-write, which FerretDB does not provide (its findAndModify is not atomic).
 */
import { MongoBulkWriteError, MongoServerError } from 'mongodb';
import type { Logger } from 'pino';
import { AppError, MESSAGES } from '../domain/errors';
import { type Clock, utcMonth } from '../domain/time';
import type { EventDoc } from '../db/documents';
import type { ApiKeyRepository } from '../db/apiKeyRepository';
import type { Collections } from '../db/database';
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

/** The head of a tenant with no events yet. */
const NO_EVENTS: Head = { seq: 0, month: '', monthSeq: 0 };

const MAX_BATCH = 1000;
// Each retry follows a lost race, i.e. another writer's progress; past this many the caller gets a 503.
const MAX_ATTEMPTS = 50;
const DUPLICATE_KEY = 11000;

export interface WriterStats {
  batches: number;
  events: number;
  conflicts: number;
}

export class EventWriter {
  private queue: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private readonly heads = new Map<string, Head>();
  readonly stats: WriterStats = { batches: 0, events: 0, conflicts: 0 };

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
   * Stores one event; resolves once it is durable. Rejects with 429 when the tenant's cap is used up
   * and with 401 when the key has been revoked since the request was authenticated.
   */
  write(draft: EventDraft, keyHash: string): Promise<EventDoc> {
    return new Promise<EventDoc>((resolve, reject) => {
      this.queue.push({ draft, keyHash, resolve, reject });
      this.flushing ??= this.drain().finally(() => {
        this.flushing = null;
      });
    });
  }

  /** Resolves when everything queued so far has been written or refused. */
  async idle(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async drain(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0, MAX_BATCH);
      try {
        await this.commit(batch);
      } catch (error) {
        // commit() settles its callers itself; this only guards the loop against a bug there.
        this.log.error({ err: error }, 'group commit failed');
        for (const p of batch) p.reject(error);
      }
    }
  }

  private async loadHeads(tenants: string[]): Promise<void> {
    const missing = tenants.filter((tenant) => !this.heads.has(tenant));
    await Promise.all(
      missing.map(async (tenant) => {
        const last = await this.c.events.findOne(
          { tenant },
          { sort: { seq: -1 }, projection: { seq: 1, month: 1, month_seq: 1 } },
        );
        this.heads.set(tenant, last ? { seq: last.seq, month: last.month, monthSeq: last.month_seq } : NO_EVENTS);
      }),
    );
  }

  private async commit(batch: Pending[]): Promise<void> {
    let pending = batch;
    for (let attempt = 0; pending.length > 0 && attempt < MAX_ATTEMPTS; attempt++) {
      const tenants = [...new Set(pending.map((p) => p.draft.tenant))];
      const hashes = [...new Set(pending.map((p) => p.keyHash))];
      const [caps, activeKeys] = await Promise.all([this.orgs.caps(tenants), this.keys.activeAmong(hashes), this.loadHeads(tenants)]);
      const receiptMonth = utcMonth(this.clock.now());

      // Give each event its place; the heads are advanced on a copy and kept only if the write succeeds.
      const next = new Map<string, Head>();
      const docs: EventDoc[] = [];
      const owners: Pending[] = [];
      for (const p of pending) {
        if (!activeKeys.has(p.keyHash)) {
          this.onInactiveKey(p.keyHash);
          p.reject(new AppError('INVALID_API_KEY', MESSAGES.invalidApiKey));
          continue;
        }
        const tenant = p.draft.tenant;
        const head = next.get(tenant) ?? this.heads.get(tenant) ?? NO_EVENTS;
        // Months never go backwards along the sequence, even if this process's clock lags another's.
        const month = head.month > receiptMonth ? head.month : receiptMonth;
        const monthSeq = head.month === month ? head.monthSeq + 1 : 1;
        if (monthSeq > (caps.get(tenant) ?? 0)) {
          p.reject(new AppError('MONTHLY_LIMIT_REACHED', MESSAGES.monthlyLimitReached));
          continue;
        }
        const placed = { seq: head.seq + 1, month, monthSeq };
        next.set(tenant, placed);
        docs.push({ ...p.draft, seq: placed.seq, month, month_seq: monthSeq });
        owners.push(p);
      }
      if (docs.length === 0) return;

      const inserted = await this.insert(docs);
      this.stats.batches++;
      this.stats.events += inserted.count;
      owners.slice(0, inserted.count).forEach((p, i) => p.resolve(docs[i] as EventDoc));
      if (inserted.count === docs.length) {
        for (const [tenant, head] of next) this.heads.set(tenant, head);
        return;
      }
      // Whatever happened to the rest, our idea of their tenants' newest events is out of date.
      const rest = owners.slice(inserted.count);
      for (const p of rest) this.heads.delete(p.draft.tenant);
      for (const [tenant, head] of next) if (!rest.some((p) => p.draft.tenant === tenant)) this.heads.set(tenant, head);
      if (inserted.error) {
        // Not a lost race: the outcome of these writes is unknown, so they are not acknowledged.
        this.log.error({ err: inserted.error, events: rest.length }, 'event insert failed');
        const failure = new AppError('SERVICE_UNAVAILABLE', 'The event store did not confirm the write; retry later', {}, { cause: inserted.error });
        for (const p of rest) p.reject(failure);
        return;
      }
      this.stats.conflicts++;
      pending = rest;
    }
    for (const p of pending) {
      p.reject(new AppError('SERVICE_UNAVAILABLE', 'Too many concurrent writers for this organization; retry'));
    }
  }

  /**
   * Ordered insert: on the first duplicate sequence number the database stops, so what was stored is
   * exactly a prefix of the batch. Returns its length, and the error when it was not a lost race.
   */
  private async insert(docs: EventDoc[]): Promise<{ count: number; error?: unknown }> {
    try {
      await this.c.events.insertMany(docs, { ordered: true, writeConcern: { w: 'majority', j: true } });
      return { count: docs.length };
    } catch (error) {
      if (error instanceof MongoBulkWriteError) {
        const first = Array.isArray(error.writeErrors) ? error.writeErrors[0] : error.writeErrors;
        const count = error.insertedCount;
        return first?.code === DUPLICATE_KEY ? { count } : { count, error };
      }
      if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) return { count: 0 };
      return { count: 0, error };
    }
  }
}
