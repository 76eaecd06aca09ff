/**
 * Retention and erasure, each step an entry of the organization's own log (domain/retention.ts says
 * what a verifier checks of them):
 * - the policy: an owner sets days within the installation's bounds; a shorter one takes effect after
 *   the notice period, a longer one at once;
 * - the prune job removes events received before now − days that a signed checkpoint covers;
 * - an owner erases an actor's events, or chosen events, with a reason code;
 * - legal holds: matching events are neither pruned nor erased (a hold on everything stops both).
 *
 * Order of each removal, so that no event is ever missing without authority: the entry naming the
 * events is written first, then each event is replaced by its tombstone in one write (db/documents.ts:
 * its leaf stays for entry bundles and reseals, its number and id stay taken, body and salt go), then
 * the counts and the removal mark change (streams on every instance check it) and the caller is
 * answered. A crash in between leaves events that an entry covers but that are still there: the next
 * prune removes them under a new entry; an erasure is run again (`ledger audit` names them).
 */
import type { Logger } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import { type EventDoc, type RemovalKind, type RetentionHoldDoc, toEvent, tombstoneOf } from '../db/documents';
import type { ExportLeaseStore } from '../db/exportLeaseStore';
import type { RetentionStore } from '../db/retentionStore';
import { AppError } from '../domain/errors';
import {
  DAY_MS, holdMatches, holdsEverything, isKeptEntry, isShorter, policyAt, RETENTION_ACTIONS, type TErasureReason, type THoldFilter, type TRemovedNotice, type TRetentionHold, type TRetentionView,
} from '../domain/retention';
import { formatRanges } from '../client/retentionCheck';
import type { Clock } from '../domain/time';
import type { ApiKeyPrincipal, SessionPrincipal } from './auth';
import { actorOf, type SelfAudit } from './selfAudit';

/**
 * Events named by one prune or erasure entry: its ranges stay inside an event's metadata limit (64 KiB by
 * default) even when every event is apart from the next (an actor's events among others': "12345," each).
 */
const EVENTS_PER_ENTRY = 5_000;
/** How long one organization's retention work may hold its lease before another instance may take over. */
const LEASE_MS = 10 * 60_000;
/** How long a list page may show an organization's removed-events counts before reading them again. */
const NOTICE_TTL_MS = 5_000;

export interface RetentionOptions {
  minDays: number;
  /** Null: "for ever" is allowed. */
  maxDays: number | null;
  noticeDays: number;
}

/**
 * Who may change retention: an owner's session (the dashboard) or an API key with `retention:manage`
 * (/v1/retention, which only an owner can grant); the procedures check which, the entries name who.
 */
export type RetentionPrincipal = SessionPrincipal | ApiKeyPrincipal;

export interface RetentionLedger {
  /** The size of the organization's newest signed checkpoint (0: none). */
  signedSize(tenant: string): Promise<number>;
  /** Signs a checkpoint that covers `seq` (an erasure of events written a moment ago). */
  integrate(tenant: string, seq: number): Promise<void>;
}

/** One removal's events, in sequence order. */
type Removal = EventDoc[];

export interface RetentionServiceOptions {
  store: RetentionStore;
  /** Every organization's id (the prune job's round). */
  tenants: () => Promise<string[]>;
  leases: ExportLeaseStore;
  ledger: RetentionLedger;
  audit: SelfAudit;
  options: RetentionOptions;
  clock: Clock;
  log: Logger;
}

export class RetentionService {
  private readonly holder = uuidv7();
  private readonly notices = new Map<string, { at: number; notice: TRemovedNotice | null }>();

  private readonly store: RetentionStore;
  private readonly tenants: () => Promise<string[]>;
  private readonly leases: ExportLeaseStore;
  private readonly ledger: RetentionLedger;
  private readonly audit: SelfAudit;
  private readonly options: RetentionOptions;
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(options: RetentionServiceOptions) {
    ({
      store: this.store,
      tenants: this.tenants,
      leases: this.leases,
      ledger: this.ledger,
      audit: this.audit,
      options: this.options,
      clock: this.clock,
      log: this.log,
    } = options);
  }

  async view(tenant: string): Promise<TRetentionView> {
    const [changes, holds, state] = await Promise.all([this.store.policyChanges(tenant), this.store.holds(tenant), this.store.state(tenant)]);
    const now = this.clock.now().getTime();
    const inForce = policyAt(changes, now);
    const latest = changes.at(-1);
    const pending = latest && latest.effectiveAt > now ? { days: latest.days, effective_at: new Date(latest.effectiveAt).toISOString() } : null;
    return {
      days: inForce?.days ?? null,
      pending,
      min_days: this.options.minDays,
      max_days: this.options.maxDays,
      notice_days: this.options.noticeDays,
      holds: holds.map(holdView),
      pruned: state?.pruned ?? 0,
      erased: state?.erased ?? 0,
      pruned_before: state?.pruned_before?.toISOString() ?? null,
    };
  }

  /**
   * What a list page or export says of removed events; null when none were. Read at most every few
   * seconds per organization: every list page asks.
   */
  async notice(tenant: string): Promise<TRemovedNotice | null> {
    const now = this.clock.now().getTime();
    const cached = this.notices.get(tenant);
    if (cached && now - cached.at < NOTICE_TTL_MS) return cached.notice;
    const state = await this.store.state(tenant);
    const notice = !state || state.pruned + state.erased === 0
      ? null
      : { pruned: state.pruned, erased: state.erased, pruned_before: state.pruned_before?.toISOString() ?? null, policy_days: state.policy_days ?? null };
    if (this.notices.size >= 10_000) this.notices.clear();
    this.notices.set(tenant, { at: now, notice });
    return notice;
  }

  /** Records a new policy: a shorter one (or the first) takes effect after the notice period, a longer one now. */
  async setPolicy(principal: RetentionPrincipal, days: number | null): Promise<TRetentionView> {
    const { minDays, maxDays, noticeDays } = this.options;
    if (days === null && maxDays !== null) throw invalid(`Invalid request: this installation keeps events for at most ${maxDays} days, so choose a number of days`);
    if (days !== null && (days < minDays || (maxDays !== null && days > maxDays))) {
      throw invalid(`Invalid request: days must be ${maxDays === null ? `at least ${minDays}` : `a whole number between ${minDays} and ${maxDays}`}`);
    }
    const tenant = principal.tenant;
    const now = this.clock.now();
    const inForce = policyAt(await this.store.policyChanges(tenant), now.getTime())?.days ?? null;
    const effectiveAt = new Date(now.getTime() + (isShorter(days, inForce) ? noticeDays * DAY_MS : 0));
    // The entry's own time (`now`, given) is what a verifier measures the notice from.
    await this.audit.record(tenant, actorOf(principal), RETENTION_ACTIONS.policyChanged, { type: 'retention_policy', id: tenant }, {
      days, previous_days: inForce, effective_at: effectiveAt.toISOString(), notice_days: noticeDays,
    }, { id: uuidv7(), at: now });
    return this.view(tenant);
  }

  /** Places a hold: the new hold, and the retention view with it. */
  async placeHold(principal: RetentionPrincipal, filter: THoldFilter, reason: string): Promise<{ hold: TRetentionHold; view: TRetentionView }> {
    // A member by email, a key by its id (`key_…`).
    const placedBy = principal.kind === 'apiKey' ? principal.keyId : principal.email;
    const doc: RetentionHoldDoc = { _id: `hold_${uuidv7()}`, org_id: principal.tenant, filter, reason, placed_at: this.clock.now(), placed_by: placedBy };
    // Recorded first: a hold is in the log before anything relies on it.
    await this.audit.record(principal.tenant, actorOf(principal), RETENTION_ACTIONS.holdPlaced, { type: 'legal_hold', id: doc._id }, { hold_id: doc._id, filter, reason });
    await this.store.addHold(doc);
    return { hold: holdView(doc), view: await this.view(principal.tenant) };
  }

  async releaseHold(principal: RetentionPrincipal, id: string): Promise<TRetentionView> {
    const doc = await this.store.removeHold(principal.tenant, id);
    if (!doc) throw new AppError('HOLD_NOT_FOUND', 'No such legal hold');
    await this.audit.record(principal.tenant, actorOf(principal), RETENTION_ACTIONS.holdReleased, { type: 'legal_hold', id }, { hold_id: id });
    return this.view(principal.tenant);
  }

  /** Erases an actor's events, or the events with these ids (never retention entries), except those on hold. */
  async erase(principal: RetentionPrincipal, which: { actor_id?: string | undefined; event_ids?: string[] | undefined }, reason: TErasureReason): Promise<{ erased: number; held: number; entries: number[] }> {
    const tenant = principal.tenant;
    return this.leased(tenant, async () => {
      const holds = await this.store.holdsInForce(tenant);
      const docs = (await this.store.matching(tenant, which)).filter((doc) => !isKeptEntry(doc));
      const record = (part: Removal, held: number) => this.audit.record(tenant, actorOf(principal), RETENTION_ACTIONS.erased, { type: 'erasure', id: `erasure_${uuidv7()}` }, {
        ranges: formatRanges(part.map((doc) => doc.seq)), count: part.length, reason, held,
      });
      if (holds.some((hold) => holdsEverything(hold.filter))) {
        // Refused, and recorded all the same: the request is in the log, with what it would have met.
        await record([], docs.length);
        throw new AppError('LEGAL_HOLD', 'The organization is on legal hold: nothing can be erased until the hold is released');
      }
      const { removal, held } = this.select(docs, holds);
      // Every request leaves an entry, one that erased nothing when a hold kept everything it met.
      if (removal.length === 0) return { erased: 0, held, entries: [(await record([], held)).seq] };
      const newest = (removal.at(-1) as EventDoc).seq;
      // Only signed events are removed: their leaves must be in the tiles before their bodies go.
      if ((await this.ledger.signedSize(tenant)) < newest) await this.ledger.integrate(tenant, newest);
      const entries: number[] = [];
      for (const part of chunks(removal)) {
        const entry = await record(part, held);
        entries.push(entry.seq);
        await this.removed(tenant, part, 'erased', entry.seq);
      }
      return { erased: removal.length, held, entries };
    });
  }

  /**
   * Replaces removed events by their tombstones and counts them; the count's write changes the removal
   * mark, which every instance's streams (this one's too) check before sending what they hold in memory.
   */
  private async removed(tenant: string, part: Removal, kind: RemovalKind, entry: number, prune?: { cutoff: Date; days: number }): Promise<void> {
    await this.store.remove(tenant, part.map((doc) => tombstoneOf(doc, kind, entry)));
    await this.store.counted(tenant, kind, part.length, prune);
    this.notices.delete(tenant);
  }

  /**
   * Prunes one organization: events received before now − days (the policy in force) that a signed
   * checkpoint covers, except held ones and retention entries. Returns what it removed (0 when there is
   * no policy, the organization is on hold, or another instance is at it).
   */
  async prune(tenant: string): Promise<{ pruned: number; held: number; entries: number[] }> {
    const none = { pruned: 0, held: 0, entries: [] };
    const now = this.clock.now();
    const days = policyAt(await this.store.policyChanges(tenant), now.getTime())?.days ?? null;
    if (days === null) return none;
    const run = await this.leased(tenant, async () => {
      const holds = await this.store.holdsInForce(tenant);
      if (holds.some((hold) => holdsEverything(hold.filter))) {
        this.log.info({ tenant }, 'retention: the organization is on legal hold; nothing pruned');
        return none;
      }
      const cutoff = new Date(now.getTime() - days * DAY_MS);
      const signed = await this.ledger.signedSize(tenant);
      // Removed as it is read, a few thousand events at a time: memory stays flat whatever the backlog (the
      // events deleted are behind the cursor, which reads on).
      let pending: Removal = [];
      let heldSince = 0;
      const total = { pruned: 0, held: 0 };
      const entries: number[] = [];
      const flush = async () => {
        // Read in order of receipt, which differs by a little from sequence order across instances.
        for (const part of chunks(pending.sort((a, b) => a.seq - b.seq))) {
          const entry = await this.audit.record(tenant, { type: 'service', job: 'retention' }, RETENTION_ACTIONS.pruned, { type: 'retention_policy', id: tenant }, {
            ranges: formatRanges(part.map((doc) => doc.seq)), count: part.length, cutoff: cutoff.toISOString(), policy_days: days, held: heldSince,
          });
          heldSince = 0;
          entries.push(entry.seq);
          await this.removed(tenant, part, 'pruned', entry.seq, { cutoff, days });
          total.pruned += part.length;
        }
        pending = [];
      };
      for await (const batch of this.store.receivedBefore(tenant, cutoff, signed)) {
        const picked = this.select(batch.filter((doc) => !isKeptEntry(doc)), holds);
        heldSince += picked.held;
        total.held += picked.held;
        pending.push(...picked.removal);
        if (pending.length >= EVENTS_PER_ENTRY) await flush();
      }
      await flush();
      if (total.pruned) this.log.info({ tenant, ...total, cutoff, days }, 'retention: pruned');
      return { ...total, entries };
    }).catch((error: unknown) => {
      if (error instanceof AppError && error.code === 'RETENTION_BUSY') return none;
      throw error;
    });
    return run;
  }

  /** Prunes every organization (those without a policy in force cost one read), one after another. */
  async pruneAll(): Promise<void> {
    for (const tenant of await this.tenants()) {
      try {
        await this.prune(tenant);
      } catch (error) {
        this.log.error({ tenant, error: String(error) }, 'retention: pruning failed; retrying at the next run');
      }
    }
  }

  /** The events to remove, and how many a hold keeps. */
  private select(docs: readonly EventDoc[], holds: readonly Pick<RetentionHoldDoc, 'filter'>[]): { removal: Removal; held: number } {
    if (holds.length === 0) return { removal: [...docs], held: 0 };
    const removal = docs.filter((doc) => !holds.some((hold) => holdMatches(hold.filter, toEvent(doc))));
    return { removal, held: docs.length - removal.length };
  }

  /** Runs `work` holding the organization's retention lease (one prune or erasure at a time, installation-wide). */
  private async leased<T>(tenant: string, work: () => Promise<T>): Promise<T> {
    const now = this.clock.now();
    if (!(await this.leases.take(tenant, 'retention', this.holder, now, new Date(now.getTime() + LEASE_MS)))) {
      throw new AppError('RETENTION_BUSY', 'A prune or erasure of this organization is running; retry in a moment');
    }
    try {
      return await work();
    } finally {
      await this.leases.give(tenant, 'retention', this.holder);
    }
  }
}

function* chunks(removal: Removal): Generator<Removal> {
  for (let at = 0; at < removal.length; at += EVENTS_PER_ENTRY) yield removal.slice(at, at + EVENTS_PER_ENTRY);
}

function holdView(doc: RetentionHoldDoc): TRetentionHold {
  return { id: doc._id, filter: doc.filter, reason: doc.reason, placed_at: doc.placed_at.toISOString(), placed_by: doc.placed_by };
}

function invalid(message: string): AppError {
  return new AppError('VALIDATION_FAILED', message, { fields: ['days'] });
}
