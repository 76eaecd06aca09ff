/**
 * Group commit with exact monthly caps, fair between organizations, and failures that stay with the
 * event that caused them.
 *
 * Creates queue per organization (tenant). While one round is being written the next gathers, and each
 * round takes a fair share of every waiting tenant's queue (so one tenant's flood cannot push the others
 * out), checks their keys (against a revocation mark read at most every 250 ms: db/apiKeyRepository.ts,
 * `ActiveKeys`) and caps (read at most once a minute), and writes them in one ordered `insertMany` with
 * a journaled, majority write concern. No caller is
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
 * A writer short of CPU (cpuPressure.ts: throttled by its CPU quota, as in a container with a CPU
 * limit) with events already waiting when a round ends lets the next round gather for a moment
 * (INGEST_COMMIT_DELAY_MS) before it starts: each round has costs of its own (the key check, the
 * insert's round trip, the driver's work and, on one machine, the kernel's for the database's traffic)
 * that fewer, larger rounds share. A writer with CPU to spare, whose rounds are as many as the
 * database's latency allows, or one that was idle (a client sending one request after another), never
 * makes a caller wait for it: there, gathering would only lower its throughput.
 *
 * Where each event goes is decided by a pure function (placement.ts); the ordered insert and what
 * FerretDB needs to report it truly are the database layer's (db/eventInserts.ts). An ordered insert
 * stops at the first document that fails, so what was stored is exactly a prefix of the round, and
 * that prefix is acknowledged. What stopped it concerns that document's tenant only:
 * - a duplicate sequence number (a lost race): that tenant's newest event is found again;
 * - a duplicate id (the same event, written already): its caller gets the stored event;
 * - the database refusing that one document: its caller alone gets 422.
 * Every other unstored event keeps its tenant's numbering and is written again at once: another tenant's
 * failure costs it one more insert, never an error. Only when the database is unreachable or a write
 * concern is not met is the outcome of the rest unknown: none of it is acknowledged, and its callers get 503.
 */
import type { Logger } from 'pino';
import { AppError, MESSAGES } from '../domain/errors';
import { mapLimited } from '../domain/limited';
import { type Clock, utcMonth } from '../domain/time';
import type { ActiveKeys } from '../db/apiKeyRepository';
import { type EventDoc, eventHashesOfDoc, type StoredEvent } from '../db/documents';
import { eventMac } from '../db/rowMacs';
import { type EventHashes, leafCommitOf } from '../domain/ledger/eventHash';
import type { RowMac } from '../domain/ledger/rowMac';
import { describeDbError, UNAVAILABLE_RETRY_AFTER_S, unreachableDatabaseError } from '../db/errors';
import type { EventInserts, InsertOutcome } from '../db/eventInserts';
import type { EventReader } from '../db/eventReader';
import type { OrgRepository } from '../db/orgRepository';
import { CpuPressure } from './cpuPressure';
import { NO_EVENTS, place, type Placement, type Position } from './placement';
import { unitTenant, type WriteUnit } from './writeUnit';

/** A unit waiting in this writer: its events as they get stored, and its caller. */
interface Pending {
  unit: WriteUnit;
  tenant: string;
  /**
   * The stored events, by position in `unit.drafts` (a retried event found removed since: its tombstone);
   * the caller is answered when none is missing.
   */
  docs: (StoredEvent | undefined)[];
  /** The events' hashes, by position, computed once (their MACs, their receipts and their leaves use them). */
  hashes: (EventHashes | undefined)[];
  resolve: (docs: StoredEvent[]) => void;
  reject: (error: unknown) => void;
}

/** The events of `p` not stored yet, with their positions. */
function missing(p: Pending): { draft: WriteUnit['drafts'][number]; index: number }[] {
  const out: { draft: WriteUnit['drafts'][number]; index: number }[] = [];
  p.unit.drafts.forEach((draft, index) => {
    if (!p.docs[index]) out.push({ draft, index });
  });
  return out;
}

/** One event of the round's insert, and the unit (and position in it) it answers. */
interface Placed {
  doc: EventDoc;
  hashes: EventHashes;
  owner: Pending;
  index: number;
}

interface Tenant {
  id: string;
  queue: Pending[];
  /** The tenant's newest stored event as far as this process knows; null: find it before writing. */
  newest: Position | null;
  /** A sequence number known to be taken (0: none known): where the search for the newest starts. */
  taken: number;
  /** The tenant's monthly cap and when it was read (ms): caps change only by an operator's hand. */
  cap: { value: number; at: number } | null;
  /** The cap refused an event in `month`: until `until` (ms), later creates are refused at the door. */
  capped: { month: string; until: number } | null;
}

const MAX_ROUND = 1000;
// Each retry follows a lost race, i.e. another writer's progress; past this many the caller gets a 503.
const MAX_RACES = 50;
/**
 * How long a tenant found at its cap is refused without a database round. Caps only fall within a
 * month, so the only thing this delays is a cap raised by an operator: it applies within this time.
 */
const CAP_RECHECK_MS = 10_000;
/**
 * How long a tenant's cap, once read, is used without reading it again. Caps change only by an
 * operator's hand, and a round's reads cost as much as its insert on FerretDB: read every second, the
 * caps of 1,000 organizations sharing the load cost a point read for nearly every event (939 per 1,000
 * events; the load over them stored 41% of what one organization's did, 76% with caps and the auth
 * shortcut kept a minute). The count against the cap stays exact; a lowered cap applies within this
 * time. A raised one applies within CAP_RECHECK_MS: no event is refused on a cap older than
 * CAP_FRESH_TO_REFUSE_MS (refusals are rare, and pay the read).
 */
const CAP_CACHE_MS = 60_000;
/** The oldest a cap may be when the writer refuses an event on it: older, it is read again first. */
const CAP_FRESH_TO_REFUSE_MS = 1000;
/** Tenants kept for their known newest events; past this many, idle ones are dropped (found again when needed). */
const MAX_IDLE_TENANTS = 10_000;
/** Point reads per round (keys, caps, newest events) in flight at once: a round may hold a thousand tenants. */
export const TENANT_READS_IN_FLIGHT = 16;

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

export interface EventWriterOptions {
  inserts: EventInserts;
  /** A tenant's stored events by id: how a duplicate is told from a lost race. */
  readerOf: (tenant: string) => Pick<EventReader, 'getMany'>;
  orgs: OrgRepository;
  /** The round's keys, checked again right before the write. */
  keys: Pick<ActiveKeys, 'among'>;
  clock: Clock;
  log: Logger;
  /** Told about keys found revoked at commit, so authentication stops trusting them at once. */
  onInactiveKey?: (hash: string) => void;
  /** Told about every event this writer stored, with its hashes, once it is durable (the ledger integrates them). */
  onStored?: (docs: EventDoc[], hashes: EventHashes[]) => void;
  /** How long the next round gathers when events are already waiting at the end of one (ms; 0: none). */
  commitDelayMs?: number;
  /** Seals each event at its place (db/rowMacs.ts); null where nothing is signed (no key file). */
  rowMac?: RowMac | null;
  /** The size of the tenant's newest checkpoint this installation's key signed (0: none). */
  signedFloor?: (tenant: string) => Promise<number>;
}

export class EventWriter {
  private readonly tenants = new Map<string, Tenant>();
  private readonly cpu = new CpuPressure();
  private flushing: Promise<void> | null = null;
  readonly stats: WriterStats = { batches: 0, events: 0, conflicts: 0, duplicates: 0, refused: 0 };

  private readonly inserts: EventInserts;
  private readonly readerOf: (tenant: string) => Pick<EventReader, 'getMany'>;
  private readonly orgs: OrgRepository;
  private readonly keys: Pick<ActiveKeys, 'among'>;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly onInactiveKey: (hash: string) => void;
  private readonly onStored: (docs: EventDoc[], hashes: EventHashes[]) => void;
  private readonly commitDelayMs: number;
  private readonly rowMac: RowMac | null;
  private readonly signedFloor: (tenant: string) => Promise<number>;

  constructor(options: EventWriterOptions) {
    ({
      inserts: this.inserts,
      readerOf: this.readerOf,
      orgs: this.orgs,
      keys: this.keys,
      clock: this.clock,
      log: this.log,
      onInactiveKey: this.onInactiveKey = () => undefined,
      onStored: this.onStored = () => undefined,
      commitDelayMs: this.commitDelayMs = 0,
      rowMac: this.rowMac = null,
      signedFloor: this.signedFloor = () => Promise.resolve(0),
    } = options);
  }

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
   * Stores a unit's events, in order, at consecutive numbers as long as no other writer takes numbers of
   * its tenant meanwhile: the cap takes all of them or refuses all of them (unless the unit is exempt),
   * and the promise resolves, in order, once all are durable. An event whose id is stored already is
   * answered with the stored event (or its tombstone, when it was removed since) and not counted again. Rejects with 429 when the tenant's cap is used
   * up, with 401 when the key has been revoked since the request was authenticated, with 422 when the
   * database refuses an event itself and with 503 when the write could not be confirmed.
   */
  write(unit: WriteUnit): Promise<StoredEvent[]> {
    if (unit.drafts.length === 0) return Promise.resolve([]);
    const tenant = this.tenant(unitTenant(unit));
    const refusal = unit.capExempt ? null : this.refusedAtDoor(tenant.id);
    if (refusal) return Promise.reject(refusal);
    return new Promise<StoredEvent[]>((resolve, reject) => {
      // A unit of many events (a batch) is hashed now, in its caller's turn, while the database may still
      // be writing the round before: in the round, between two inserts, its hashing would hold the
      // database idle (a batch of 100: ~3 ms). A single event is hashed in the round: that work lets the
      // next round gather more single events, and smaller rounds cost more CPU per event (each has its own
      // key check and insert; hashed when queued, single events cost 10-20% more, BENCHMARKS.md).
      const hashes = unit.drafts.length > 1 ? unit.drafts.map((draft) => eventHashesOfDoc(draft)) : [];
      tenant.queue.push({ unit, tenant: tenant.id, docs: [], hashes, resolve, reject });
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
      tenant = { id, queue: [], newest: null, taken: 0, cap: null, capped: null };
      this.tenants.set(id, tenant);
    }
    return tenant;
  }

  /**
   * A fair round: every waiting tenant gets an equal share of the places, unused shares go to the rest.
   * A caller's events are never split between rounds, so a round may pass MAX_ROUND by one unit.
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
          taken += p.unit.drafts.length;
          size += p.unit.drafts.length;
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
        // A read before an insert failed (caps, keys, newest events): nothing of what is still pending was written.
        for (const p of round) this.tenant(p.tenant).newest = null;
        this.log.error({ error: describeDbError(error) }, 'group commit failed before writing');
        for (const p of round) p.reject(error);
      }
      if (this.commitDelayMs > 0 && this.busy() && this.cpu.short()) await new Promise((resolve) => setTimeout(resolve, this.commitDelayMs));
    }
  }

  /** Events wait already, though fewer than a full round: the next round is worth gathering for. */
  private busy(): boolean {
    let waiting = 0;
    for (const tenant of this.tenants.values()) for (const p of tenant.queue) waiting += p.unit.drafts.length;
    return waiting > 0 && waiting < MAX_ROUND;
  }

  /** Writes a round: place, insert, answer; again after a lost race or a refused event, for what is left. */
  private async commit(round: Pending[]): Promise<void> {
    let pending = round;
    for (let races = 0; pending.length > 0 && races < MAX_RACES; ) {
      const placed = this.place(await this.admitted(pending));
      if (placed.length === 0) return;
      const outcome = await this.inserts.insertInOrder(placed.map((p) => p.doc));
      this.stored(placed.slice(0, outcome.stored));
      const units = [...new Set(placed.map((p) => p.owner))];
      pending = this.settle(units);
      if (outcome.stop === undefined || outcome.stop === 'interrupted') continue;
      const stopped = placed[outcome.stored] as Placed;
      if (outcome.stop === 'duplicate') {
        if (await this.duplicate(stopped.doc, pending)) races++;
        pending = this.settle(pending);
      } else if (outcome.stop === 'refused') {
        // That event is not stored and never will be; its number is free again. Its caller is refused.
        this.stats.refused++;
        this.log.warn({ tenant: stopped.doc.tenant, code: outcome.code, index: outcome.stored }, 'the event store refused an event');
        stopped.owner.reject(new AppError('EVENT_REFUSED', MESSAGES.eventRefused));
        pending = pending.filter((p) => p !== stopped.owner);
      } else {
        this.unconfirmed(pending, outcome);
        return;
      }
    }
    for (const p of pending) {
      p.reject(new AppError('SERVICE_UNAVAILABLE', 'Too many concurrent writers for this organization; retry', { retryAfter: 1 }));
    }
  }

  /**
   * The units whose key is still active and of their events' organization, with every tenant's newest
   * event and cap at hand; the others are refused. (A unit's api_key_id may name another key of the
   * organization: the one that claimed an idempotent request.)
   */
  private async admitted(pending: Pending[]): Promise<Pending[]> {
    const ids = [...new Set(pending.map((p) => p.tenant))];
    const [activeKeys] = await Promise.all([
      this.keys.among([...new Set(pending.flatMap((p) => (p.unit.keyHash === null ? [] : [p.unit.keyHash])))]),
      this.refreshCaps(pending, this.clock.now().getTime()),
      mapLimited(ids.filter((id) => !this.tenant(id).newest), TENANT_READS_IN_FLIGHT, async (id) => {
        const tenant = this.tenant(id);
        // Numbers up to the newest checkpoint the key signed are never given again, whatever the database holds.
        tenant.newest ??= (await this.inserts.newest(id, tenant.taken, await this.signedFloor(id))) ?? NO_EVENTS;
      }),
    ]);
    return pending.filter((p) => {
      // The service's own records (writeUnit.ts) name no key.
      if (p.unit.keyHash === null) return p.unit.drafts.every((d) => d.tenant === p.tenant);
      const key = activeKeys.get(p.unit.keyHash);
      if (key?.org_id === p.tenant && p.unit.drafts.every((d) => d.tenant === key.org_id)) return true;
      if (!key) this.onInactiveKey(p.unit.keyHash);
      p.reject(new AppError('INVALID_API_KEY', MESSAGES.invalidApiKey));
      return false;
    });
  }

  /** The round's documents, in order: each unit's missing events at the places `place` gives; capped units are refused. */
  private place(pending: Pending[]): Placed[] {
    const now = this.clock.now();
    const todo = pending.map((p) => missing(p));
    const { placements } = place(
      pending.map((p, i) => ({ tenant: p.tenant, events: (todo[i] ?? []).length, capExempt: p.unit.capExempt, counted: p.unit.keyHash !== null })),
      (tenant) => this.tenant(tenant).newest ?? NO_EVENTS,
      (tenant) => this.tenant(tenant).cap?.value ?? 0,
      utcMonth(now),
    );
    const placed: Placed[] = [];
    pending.forEach((owner, i) => {
      const placement = placements[i] as Placement;
      if (placement.capped) {
        this.tenant(owner.tenant).capped = { month: placement.month, until: now.getTime() + CAP_RECHECK_MS };
        owner.reject(capReached(now));
        return;
      }
      const { first } = placement;
      // The service's own records take sequence numbers, not places in the month's count (placement.ts).
      const step = owner.unit.keyHash === null ? 0 : 1;
      (todo[i] ?? []).forEach(({ draft, index }, k) => {
        const hashes = (owner.hashes[index] ??= eventHashesOfDoc(draft));
        // Object.assign rather than a spread followed by keys, which V8 builds several times slower.
        const doc: EventDoc = Object.assign({}, draft, { seq: first.seq + k, month: first.month, month_seq: first.monthSeq + k * step });
        // The MAC binds the event to this place: the same event at another number is foreign.
        if (this.rowMac) doc.mac = eventMac(this.rowMac, doc, leafCommitOf(hashes));
        placed.push({ doc, hashes, owner, index });
      });
    });
    return placed;
  }

  /** Records the stored prefix: each tenant's newest event moves only here, and the ledger is told. */
  private stored(prefix: Placed[]): void {
    this.stats.batches++;
    this.stats.events += prefix.length;
    for (const { doc, owner, index } of prefix) {
      const tenant = this.tenant(doc.tenant);
      tenant.newest = { seq: doc.seq, month: doc.month, monthSeq: doc.month_seq };
      tenant.taken = doc.seq;
      owner.docs[index] = doc;
    }
    if (prefix.length > 0) this.onStored(prefix.map((p) => p.doc), prefix.map((p) => p.hashes));
  }

  /**
   * After a duplicate key at `stopped`: a lost sequence race, or an event stored already under its id (a
   * retry's, written by another request, another writer or earlier in this round). The latter are
   * answered with the stored events, found for the whole tenant at once. Returns whether it was a race.
   */
  private async duplicate(stopped: EventDoc, pending: Pending[]): Promise<boolean> {
    const tenant = this.tenant(stopped.tenant);
    tenant.newest = null;
    const waiting = pending.filter((p) => p.tenant === stopped.tenant);
    // A row under one of these ids that the service did not write (db/rowMacs.ts) is no answer: getMany moves
    // it aside, and the event is written again as after a lost race.
    const found = await this.readerOf(stopped.tenant).getMany(waiting.flatMap((p) => missing(p).map(({ draft }) => draft._id)));
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
      return false;
    }
    tenant.taken = stopped.seq;
    this.stats.conflicts++;
    return true;
  }

  /** The database could not confirm the insert: nothing of the rest is acknowledged, every caller gets 503. */
  private unconfirmed(pending: Pending[], outcome: Extract<InsertOutcome, { stop: 'unknown' }>): void {
    for (const p of pending) this.tenant(p.tenant).newest = null;
    this.log.error({ events: pending.length, error: describeDbError(outcome.error) }, 'event insert not confirmed');
    const failure = unreachableDatabaseError(outcome.error) ?? writeUnconfirmed(outcome.error);
    for (const p of pending) p.reject(failure);
  }

  /**
   * The caps of the round's tenants, read again where older than CAP_CACHE_MS, or than
   * CAP_FRESH_TO_REFUSE_MS where the cap in hand looks like refusing some of the round's events (a
   * tenant whose newest event is not known yet counts none: its cap is read at its first round anyway).
   */
  private async refreshCaps(pending: Pending[], nowMs: number): Promise<void> {
    const month = utcMonth(new Date(nowMs));
    const demand = new Map<string, number>();
    for (const p of pending) {
      if (p.unit.keyHash !== null && !p.unit.capExempt) demand.set(p.tenant, (demand.get(p.tenant) ?? 0) + missing(p).length);
    }
    const stale = [...new Set(pending.map((p) => p.tenant))].filter((id) => {
      const { cap, newest } = this.tenant(id);
      if (!cap || nowMs - cap.at >= CAP_CACHE_MS) return true;
      const used = newest?.month === month ? newest.monthSeq : 0;
      return nowMs - cap.at >= CAP_FRESH_TO_REFUSE_MS && used + (demand.get(id) ?? 0) > cap.value;
    });
    if (stale.length === 0) return;
    const caps = await this.orgs.caps(stale);
    for (const id of stale) this.tenant(id).cap = { value: caps.get(id) ?? 0, at: nowMs };
  }

  /** Answers the callers whose events are all stored; the rest, some of whose events are stored already, go on cap-exempt. */
  private settle(pending: Pending[]): Pending[] {
    const rest: Pending[] = [];
    for (const p of pending) {
      const docs = p.docs.filter((doc) => doc !== undefined);
      if (docs.length === p.unit.drafts.length) p.resolve(docs);
      else {
        if (docs.length > 0) p.unit = { ...p.unit, capExempt: true };
        rest.push(p);
      }
    }
    return rest;
  }
}
