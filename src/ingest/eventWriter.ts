/**
 * Group commit with exact monthly caps, fair between organizations, and failures that stay with the
 * event that caused them.
 *
 * Creates queue per organization (tenant). While one round is being written the next gathers, and each
 * round takes a fair share of every waiting tenant's queue (so one tenant's flood cannot push the others
 * out), checks the keys of all of them in one query (their caps are read at most once a second), and
 * writes them in one ordered `insertMany` with a journaled, majority write concern. No caller is
 * answered before the write that holds its event has been acknowledged.
 *
 * Every event takes the next per-tenant sequence number (`seq`), and the unique index on (tenant, seq)
 * decides races: of two writers, in one process or several, claiming the same number, exactly one wins;
 * the other finds the tenant's newest event again and tries again. Because a number is only ever tried
 * right after its predecessor exists, the sequence has no gaps, and that is also how the newest event is
 * found: by point reads of `seq` numbers (galloping, then bisecting, from the last number known taken),
 * each served by the same index, never a sorted query. (Instances on one database forward each
 * organization's events to one writer, src/ingest/ingest.ts, so races are rare; they stay safe.)
 * The month of receipt and the position within it (`month_seq`) follow from the predecessor, so the
 * cap check `month_seq <= cap` is exact without any atomic read-modify-write, which FerretDB does not
 * provide (its findAndModify is not atomic).
 *
 * An ordered insert stops at the first document that fails, so what was stored is exactly a prefix of the
 * round, and that prefix is acknowledged. What stopped it concerns that document's tenant only:
 * - a duplicate sequence number (a lost race): that tenant's newest event is found again;
 * - a duplicate id (the same event, written already): its caller gets the stored event;
 * - the database refusing that one document: its caller alone gets 422.
 * Every other unstored event keeps its tenant's numbering and is written again at once: another tenant's
 * failure costs it one more insert, never an error. Only when the database is unreachable or a write
 * concern is not met is the outcome of the rest unknown: none of it is acknowledged, and its callers get 503.
 */
import { MongoBulkWriteError, MongoServerError, type WriteError } from 'mongodb';
import type { Logger } from 'pino';
import { AppError, MESSAGES } from '../domain/errors';
import { type Clock, utcMonth } from '../domain/time';
import type { EventDoc } from '../db/documents';
import type { ApiKeyRepository } from '../db/apiKeyRepository';
import type { Collections } from '../db/database';
import { EventReader } from '../db/eventReader';
import { describeDbError, DUPLICATE_KEY, isDatabaseUnreachable, isDuplicateKey, UNAVAILABLE_RETRY_AFTER_S, unreachableDatabaseError } from '../db/errors';
import type { OrgRepository } from '../db/orgRepository';

/** An event ready to store, before the writer gives it its place in the tenant's sequence. */
export type EventDraft = Omit<EventDoc, 'seq' | 'month' | 'month_seq'>;

interface Head {
  seq: number;
  month: string;
  monthSeq: number;
}

/**
 * One caller's events (one, or a batch's), all of one tenant: placed together, refused together, and
 * answered together once every one of them is stored.
 */
interface Pending {
  drafts: EventDraft[];
  /** The stored events, by position in `drafts`; the caller is answered when none is missing. */
  docs: (EventDoc | undefined)[];
  /** The hash of the API key that sent the events: checked again, for the whole round, before the write. */
  keyHash: string;
  /**
   * The cap counted these events already: some of them are stored (by an earlier round that lost a race
   * midway, or by a request that died before answering), and a batch once begun is completed.
   */
  capExempt: boolean;
  resolve: (docs: EventDoc[]) => void;
  reject: (error: unknown) => void;
}

/** The events of `p` not stored yet, with their positions. */
function missing(p: Pending): { draft: EventDraft; index: number }[] {
  const out: { draft: EventDraft; index: number }[] = [];
  p.drafts.forEach((draft, index) => {
    if (!p.docs[index]) out.push({ draft, index });
  });
  return out;
}

function tenantOf(p: Pending): string {
  return (p.drafts[0] as EventDraft).tenant;
}

interface Tenant {
  id: string;
  queue: Pending[];
  /** The tenant's newest stored event as far as this process knows; null: find it before writing. */
  head: Head | null;
  /** A sequence number known to be taken (0: none known): where the search for the head starts. */
  taken: number;
  /** The tenant's monthly cap and when it was read (ms): caps change only by an operator's hand. */
  cap: { value: number; at: number } | null;
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

const MAX_ROUND = 1000;
// Each retry follows a lost race, i.e. another writer's progress; past this many the caller gets a 503.
const MAX_RACES = 50;
const WRITE_CONCERN = { w: 'majority', j: true } as const;
/**
 * How long a tenant found at its cap is refused without a database round. Caps only fall within a
 * month, so the only thing this delays is a cap raised by an operator: it applies within this time.
 */
const CAP_RECHECK_MS = 10_000;
/**
 * How long a tenant's cap, once read, is used without reading it again. A round's reads cost as much
 * as its insert on FerretDB, and small rounds (many instances, many organizations) pay them per few
 * events. The count against the cap stays exact; a changed cap applies within this time.
 */
const CAP_CACHE_MS = 1000;
/** Tenants kept for their cached heads; past this many, idle ones are dropped (their heads reload). */
const MAX_IDLE_TENANTS = 10_000;

export interface WriterStats {
  batches: number;
  events: number;
  conflicts: number;
  /** Events found stored already under their id: written once, answered again. */
  duplicates: number;
  refused: number;
}

/** The 503 of a write whose outcome is unknown: it may or may not be stored, so retrying is the caller's call. */
export function writeUnconfirmed(cause: unknown): AppError {
  return new AppError('SERVICE_UNAVAILABLE', MESSAGES.writeUnconfirmed, { retryAfter: UNAVAILABLE_RETRY_AFTER_S }, { cause });
}

/** The 429 of a used-up cap, with the seconds until the next UTC month begins. */
function capReached(now: Date): AppError {
  const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return new AppError('MONTHLY_LIMIT_REACHED', MESSAGES.monthlyLimitReached, { retryAfter: Math.ceil((nextMonth - now.getTime()) / 1000) });
}

export class EventWriter {
  private readonly tenants = new Map<string, Tenant>();
  private flushing: Promise<void> | null = null;
  readonly stats: WriterStats = { batches: 0, events: 0, conflicts: 0, duplicates: 0, refused: 0 };

  constructor(
    private readonly c: Collections,
    private readonly orgs: OrgRepository,
    private readonly keys: ApiKeyRepository,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Told about keys found revoked at commit, so authentication stops trusting them at once. */
    private readonly onInactiveKey: (hash: string) => void = () => undefined,
    /** Told about every event this writer stored, once it is durable (the ledger integrates them). */
    private readonly onStored: (docs: EventDoc[]) => void = () => undefined,
  ) {}

  /**
   * The 429 of a tenant found at its cap a moment ago, or null: a write that is not exempt is then refused
   * with no database round (see CAP_RECHECK_MS). Exposed so that a caller with work to do before writing
   * (claiming an Idempotency-Key) can refuse at the door too.
   */
  refusedAtDoor(tenantId: string): AppError | null {
    const capped = this.tenants.get(tenantId)?.capped;
    const now = this.clock.now();
    return capped && capped.month === utcMonth(now) && now.getTime() < capped.until ? capReached(now) : null;
  }

  /**
   * Stores one event; resolves once it is durable. Rejects with 429 when the tenant's cap is used up,
   * with 401 when the key has been revoked since the request was authenticated, with 422 when the
   * database refuses the event itself and with 503 when the write could not be confirmed.
   */
  async write(draft: EventDraft, keyHash: string): Promise<EventDoc> {
    return (await this.writeAll([draft], keyHash))[0] as EventDoc;
  }

  /**
   * Stores events of one tenant as one unit, in order, at consecutive numbers as long as no other writer
   * takes numbers of this tenant meanwhile: the cap takes all of them or refuses all of them, and the
   * promise resolves, in order, once all are durable. An event whose id is stored already is answered
   * with the stored event and not counted again. `capExempt`: some of these events are stored already
   * (the request that sent them first died midway), so the cap counted them when the batch began.
   */
  writeAll(drafts: EventDraft[], keyHash: string, capExempt = false): Promise<EventDoc[]> {
    const first = drafts[0];
    if (!first) return Promise.resolve([]);
    const tenant = this.tenant(first.tenant);
    const refusal = capExempt ? null : this.refusedAtDoor(first.tenant);
    if (refusal) {
      return Promise.reject(refusal);
    }
    return new Promise<EventDoc[]>((resolve, reject) => {
      tenant.queue.push({ drafts, docs: [], keyHash, capExempt, resolve, reject });
      this.flushing ??= this.drain().finally(() => {
        this.flushing = null;
      });
    });
  }

  /** Resolves when everything queued so far has been written or refused. */
  async idle(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private tenant(id: string): Tenant {
    let tenant = this.tenants.get(id);
    if (!tenant) {
      if (this.tenants.size >= MAX_IDLE_TENANTS) {
        for (const [key, idle] of this.tenants) if (idle.queue.length === 0) this.tenants.delete(key);
      }
      tenant = { id, queue: [], head: null, taken: 0, cap: null, capped: null };
      this.tenants.set(id, tenant);
    }
    return tenant;
  }

  /**
   * A fair round: every waiting tenant gets an equal share of the places, unused shares go to the rest.
   * A caller's events are never split between rounds, so a round may pass MAX_ROUND by one batch.
   */
  private takeRound(): Pending[] {
    const round: Pending[] = [];
    let size = 0;
    let waiting = [...this.tenants.values()].filter((t) => t.queue.length > 0);
    while (waiting.length > 0 && size < MAX_ROUND) {
      const share = Math.max(1, Math.floor((MAX_ROUND - size) / waiting.length));
      for (const t of waiting) {
        for (let taken = 0; taken < share && size < MAX_ROUND && t.queue.length > 0; ) {
          const p = t.queue.shift() as Pending;
          round.push(p);
          taken += p.drafts.length;
          size += p.drafts.length;
        }
      }
      waiting = waiting.filter((t) => t.queue.length > 0);
    }
    return round;
  }

  private async drain(): Promise<void> {
    for (let round = this.takeRound(); round.length > 0; round = this.takeRound()) {
      try {
        await this.commit(round);
      } catch (error) {
        // A read before an insert failed (caps, keys, heads): nothing of what is still pending was written.
        for (const p of round) this.tenant(tenantOf(p)).head = null;
        this.log.error({ error: describeDbError(error) }, 'group commit failed before writing');
        for (const p of round) p.reject(error);
      }
    }
  }

  /** Whether `seq` is taken in `tenant`'s sequence, and the placement of the event holding it. */
  private async probe(tenant: string, seq: number): Promise<Head | null> {
    const doc = await this.c.events.findOne({ tenant, seq }, { projection: { _id: 0, seq: 1, month: 1, month_seq: 1 } });
    return doc ? { seq: doc.seq, month: doc.month, monthSeq: doc.month_seq } : null;
  }

  /**
   * The tenant's newest event. The sequence is gapless, so "taken" holds for every number up to the
   * head and for none above it: gallop up from a number known taken until one is free, then bisect.
   * O(log distance) point reads; usually two, since the hint is the last number this process saw.
   */
  private async findHead(tenant: string, taken: number): Promise<Head> {
    const [known, next] = await Promise.all([taken > 0 ? this.probe(tenant, taken) : NO_EVENTS, this.probe(tenant, taken + 1)]);
    // The hint is gone (events deleted behind the service's back): start from nothing.
    if (!known) return this.findHead(tenant, 0);
    let low: Head = next ?? known;
    let free = low.seq + 1;
    for (let step = 2; next; step *= 2) {
      const found = await this.probe(tenant, low.seq + step);
      if (!found) {
        free = low.seq + step;
        break;
      }
      low = found;
    }
    while (free - low.seq > 1) {
      const mid: number = low.seq + Math.floor((free - low.seq) / 2);
      const found = await this.probe(tenant, mid);
      if (found) low = found;
      else free = mid;
    }
    return low;
  }

  /** The caps of `ids`, read again (in one query) only for tenants whose cap is older than CAP_CACHE_MS. */
  private async refreshCaps(ids: string[], nowMs: number): Promise<void> {
    const stale = ids.filter((id) => {
      const cap = this.tenant(id).cap;
      return !cap || nowMs - cap.at >= CAP_CACHE_MS;
    });
    if (stale.length === 0) return;
    const caps = await this.orgs.caps(stale);
    for (const id of stale) this.tenant(id).cap = { value: caps.get(id) ?? 0, at: nowMs };
  }

  private async commit(round: Pending[]): Promise<void> {
    let pending = round;
    for (let races = 0; pending.length > 0 && races < MAX_RACES; ) {
      const ids = [...new Set(pending.map(tenantOf))];
      const hashes = [...new Set(pending.map((p) => p.keyHash))];
      const [activeKeys] = await Promise.all([
        this.keys.activeAmong(hashes),
        this.refreshCaps(ids, this.clock.now().getTime()),
        ...ids.map(async (id) => {
          const tenant = this.tenant(id);
          tenant.head ??= await this.findHead(id, tenant.taken);
        }),
      ]);
      const now = this.clock.now();
      const receiptMonth = utcMonth(now);

      // Give each event its place, each after the one before in its tenant; heads move only once stored.
      const next = new Map<string, Head>();
      const docs: EventDoc[] = [];
      const owners: { p: Pending; index: number }[] = [];
      const placed: Pending[] = [];
      for (const p of pending) {
        const key = activeKeys.get(p.keyHash);
        // The key must be active and the events its organization's (a forwarded write says so itself).
        // Their api_key_id may name another key of the organization: the one that claimed an idempotent request.
        if (!key || p.drafts.some((d) => d.tenant !== key.org_id)) {
          if (!key) this.onInactiveKey(p.keyHash);
          p.reject(new AppError('INVALID_API_KEY', MESSAGES.invalidApiKey));
          continue;
        }
        const tenant = this.tenant(tenantOf(p));
        const last = next.get(tenant.id) ?? tenant.head ?? NO_EVENTS;
        // Months never go backwards along the sequence, even if this process's clock lags another's.
        const month = last.month > receiptMonth ? last.month : receiptMonth;
        const todo = missing(p);
        const firstMonthSeq = last.month === month ? last.monthSeq + 1 : 1;
        if (!p.capExempt && firstMonthSeq + todo.length - 1 > (tenant.cap?.value ?? 0)) {
          tenant.capped = { month, until: now.getTime() + CAP_RECHECK_MS };
          p.reject(capReached(now));
          continue;
        }
        todo.forEach(({ draft, index }, i) => {
          docs.push({ ...draft, seq: last.seq + 1 + i, month, month_seq: firstMonthSeq + i });
          owners.push({ p, index });
        });
        next.set(tenant.id, { seq: last.seq + todo.length, month, monthSeq: firstMonthSeq + todo.length - 1 });
        placed.push(p);
      }
      if (docs.length === 0) return;

      const outcome = await this.insert(docs);
      this.stats.batches++;
      this.stats.events += outcome.stored;
      for (let i = 0; i < outcome.stored; i++) {
        const doc = docs[i] as EventDoc;
        const tenant = this.tenant(doc.tenant);
        tenant.head = { seq: doc.seq, month: doc.month, monthSeq: doc.month_seq };
        tenant.taken = doc.seq;
        const { p, index } = owners[i] as { p: Pending; index: number };
        p.docs[index] = doc;
      }
      if (outcome.stored > 0) this.onStored(docs.slice(0, outcome.stored));
      pending = this.settle(placed);
      if (outcome.stop === undefined) return; // all stored, all answered

      const stopped = docs[outcome.stored] as EventDoc;
      const owner = (owners[outcome.stored] as { p: Pending }).p;
      if (outcome.stop === 'race') {
        const tenant = this.tenant(stopped.tenant);
        tenant.head = null;
        // A duplicate key is a lost sequence race, or an event stored already under its id (a retry's,
        // written by another request, another writer or earlier in this round): those are answered with
        // the stored events, found for the whole tenant at once.
        const waiting = pending.filter((p) => tenantOf(p) === stopped.tenant);
        const found = await new EventReader(this.c, stopped.tenant).getMany(waiting.flatMap((p) => missing(p).map(({ draft }) => draft._id)));
        for (const p of waiting) {
          for (const { draft, index } of missing(p)) {
            const stored = found.get(draft._id);
            if (stored) p.docs[index] = stored;
          }
        }
        this.stats.duplicates += found.size;
        if (found.has(stopped._id)) {
          // Its number may still be free; the one before it is taken (or 0: none).
          tenant.taken = Math.max(stopped.seq - 1, ...[...found.values()].map((doc) => doc.seq));
        } else {
          tenant.taken = stopped.seq;
          this.stats.conflicts++;
          races++;
        }
        pending = this.settle(pending);
      } else if (outcome.stop === 'refused') {
        // That event is not stored and never will be; its number is free again. Its caller is refused.
        this.stats.refused++;
        this.log.warn({ tenant: stopped.tenant, code: outcome.code, index: outcome.stored }, 'the event store refused an event');
        owner.reject(new AppError('EVENT_REFUSED', MESSAGES.eventRefused));
        pending = pending.filter((p) => p !== owner);
      } else if (outcome.stop === 'unknown') {
        for (const p of pending) this.tenant(tenantOf(p)).head = null;
        this.log.error({ events: pending.length, error: describeDbError(outcome.error) }, 'event insert not confirmed');
        const failure = unreachableDatabaseError(outcome.error) ?? writeUnconfirmed(outcome.error);
        for (const p of pending) p.reject(failure);
        return;
      }
    }
    for (const p of pending) {
      p.reject(new AppError('SERVICE_UNAVAILABLE', 'Too many concurrent writers for this organization; retry', { retryAfter: 1 }));
    }
  }

  /** Answers the callers whose events are all stored; the rest, some of whose events are stored already, go on cap-exempt. */
  private settle(pending: Pending[]): Pending[] {
    const rest: Pending[] = [];
    for (const p of pending) {
      const docs = p.docs.filter((doc) => doc !== undefined);
      if (docs.length === p.drafts.length) p.resolve(docs);
      else {
        if (p.docs.some((doc) => doc !== undefined)) p.capExempt = true;
        rest.push(p);
      }
    }
    return rest;
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
        // FerretDB's duplicate-key message does not name the index: a duplicate is a lost sequence race
        // or an id stored already, and commit() tells which by looking the ids up.
        if (first) return first.code === DUPLICATE_KEY ? { stored: first.index, stop: 'race' } : { stored: first.index, stop: 'refused', code: first.code };
      }
      if (isDuplicateKey(error)) return { stored: 0, stop: 'race' };
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
      const found = await this.c.events.find({ tenant: { $in: tenants }, _id: { $in: docs.map((doc) => doc._id) } }, { projection: { _id: 1, seq: 1 } }).toArray();
      // Stored by this insert only where the number is ours too: the same id at another number was
      // stored before (a retried event), which the race path answers with the stored event.
      const storedAt = new Map(found.map((doc) => [doc._id, doc.seq]));
      let stored = 0;
      while (stored < docs.length && storedAt.get((docs[stored] as EventDoc)._id) === (docs[stored] as EventDoc).seq) stored++;
      const suspect = docs[stored];
      if (!suspect) return { stored };
      if (storedAt.has(suspect._id)) return { stored, stop: 'race' };
      try {
        await this.c.events.insertOne(suspect, { writeConcern: WRITE_CONCERN });
        return stored + 1 < docs.length ? { stored: stored + 1, stop: 'interrupted' } : { stored: stored + 1 };
      } catch (again) {
        if (isDatabaseUnreachable(again)) return { stored, stop: 'unknown', error: again };
        if (isDuplicateKey(again)) return { stored, stop: 'race' };
        return { stored, stop: 'refused', code: again instanceof MongoServerError ? again.code : undefined };
      }
    } catch (readError) {
      this.log.error({ error: describeDbError(readError) }, 'could not read back a failed insert');
      return { stored: 0, stop: 'unknown', error };
    }
  }
}
