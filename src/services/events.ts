/** The event use cases behind every surface: create, get, list and export. */
import { finished, pipeline, type Readable, Transform } from 'node:stream';
import type { Limits } from '../config/env';
import { decodeCursor, encodeCursor } from '../domain/cursor';
import { AppError, MESSAGES } from '../domain/errors';
import { isEventId, type TCreateBatchOutput, type TCreateEventInput, type TCreateEventOutput, type TEvent, type TEventFilters, type TListEventsInput, type TListEventsOutput } from '../domain/event';
import type { Clock } from '../domain/time';
import type { Stores } from '../db/stores';
import { type EventDoc, isTombstone, type StoredEvent, toEvent } from '../db/documents';
import type { EventReader, EventQuery } from '../db/eventReader';
import type { Ingest } from '../ingest/ingest';
import type { LedgerIntegrator } from '../ledger/integrator';
import type { ApiKeyPrincipal, Principal } from './auth';
import { draftsOf, type EventContent, freshStamp, type IdempotentWrites, type WriteKind, type Written } from './idempotency';
import { ExportSlots } from './exportSlots';
import { contentOf } from '../domain/compiledFields';
import type { ProducerKeys } from './producerKeys';

export const DEFAULT_PAGE_SIZE = 50;

/** The 400 of a batch with more than BATCH_MAX_EVENTS events. */
export function tooManyEvents(limit: number): AppError {
  return new AppError('VALIDATION_FAILED', `Invalid request: events must have at most ${limit} item${limit === 1 ? '' : 's'}`, { fields: ['events'] });
}

/** The shared filters as a query; the schema parsed the bounds, their order is checked here. */
export function toEventQuery(filters: TEventFilters): EventQuery {
  const { start_date: start, end_date: end } = filters;
  if (start && end && start > end) {
    throw new AppError('VALIDATION_FAILED', 'Invalid request: start_date must not be after end_date', {
      fields: ['start_date', 'end_date'],
    });
  }
  return {
    actor_id: filters.actor_id,
    action: filters.action,
    resource_type: filters.resource_type,
    resource_id: filters.resource_id,
    organization_id: filters.organization_id,
    start,
    end,
  };
}

/**
 * The query a principal's filters make. A viewer's is narrowed to its organization_id value and actions;
 * a filter that asks for anything outside them is refused (403), never silently widened or emptied.
 */
export function queryFor(principal: Principal, filters: TEventFilters): EventQuery {
  const query = toEventQuery(filters);
  if (principal.kind !== 'viewer') return query;
  if (filters.organization_id !== undefined && filters.organization_id !== principal.eventOrganizationId) {
    throw new AppError('OUTSIDE_VIEWER_SCOPE', `This viewer token shows only organization_id ${principal.eventOrganizationId}`, { fields: ['organization_id'] });
  }
  if (principal.actions && filters.action !== undefined && !principal.actions.includes(filters.action)) {
    throw new AppError('OUTSIDE_VIEWER_SCOPE', 'This viewer token does not show that action', { fields: ['action'] });
  }
  return { ...query, organization_id: principal.eventOrganizationId, ...(principal.actions && filters.action === undefined ? { actions: principal.actions } : {}) };
}

/** Whether the principal may see this event of its tenant (a viewer only its part). */
export function visibleTo(principal: Principal, doc: Pick<EventDoc, 'organization_id' | 'action'>): boolean {
  if (principal.kind !== 'viewer') return true;
  return doc.organization_id === principal.eventOrganizationId && (principal.actions === null || principal.actions.includes(doc.action));
}

export class EventService {
  private readonly exportSlots: ExportSlots;

  constructor(
    private readonly stores: Stores,
    private readonly ingest: Ingest,
    private readonly idempotent: IdempotentWrites,
    private readonly clock: Clock,
    /** Answers each write's ledger receipts. */
    private readonly ledger: Pick<LedgerIntegrator, 'receipt'>,
    private readonly limits: Pick<Limits, 'metadataBytes' | 'listPageBytes' | 'exportsPerOrg' | 'exportTimeoutMs' | 'batchEvents'>,
    /** What each key's events must carry: a producer's signature, or none. */
    private readonly producers: Pick<ProducerKeys, 'check'>,
  ) {
    this.exportSlots = new ExportSlots(limits.exportsPerOrg, limits.exportTimeoutMs, stores.exportLeases, clock);
  }

  /** Events are read through a reader bound to the caller's organization, and no other. */
  readerFor(principal: Principal): EventReader {
    return this.stores.events(principal.tenant);
  }

  /** One event; with `key`, exactly once however often it is sent (services/idempotency.ts). */
  async create(principal: ApiKeyPrincipal, input: TCreateEventInput, key?: string): Promise<{ output: TCreateEventOutput; replayed: boolean }> {
    const problems: string[] = [];
    const content = this.contentOf(principal.tenant, input, 'metadata', problems);
    if (problems.length) throw this.metadataTooLarge(problems);
    // Most keys are settled: their check answers at once, without a turn of waiting.
    const checking = this.producers.check(principal.tenant, principal.keyId, [content], () => '');
    if (checking) await checking;
    const { docs, replayed } = await this.store(principal, 'event', [content], key);
    const doc = docs[0] as StoredEvent;
    return { output: { success: true, event: this.answerOf(doc), ledger: this.receiptOf(doc) }, replayed };
  }

  /** Many events, stored all or none toward the caller, in order (docs/api.md, decision 18). */
  async createBatch(principal: ApiKeyPrincipal, events: TCreateEventInput[], key?: string): Promise<{ output: TCreateBatchOutput; replayed: boolean }> {
    if (events.length > this.limits.batchEvents) throw tooManyEvents(this.limits.batchEvents);
    const problems: string[] = [];
    const contents = events.map((input, i) => this.contentOf(principal.tenant, input, `events[${i}].metadata`, problems));
    if (problems.length) throw this.metadataTooLarge(problems);
    const checking = this.producers.check(principal.tenant, principal.keyId, contents, (i) => `events[${i}].`);
    if (checking) await checking;
    const { docs, replayed } = await this.store(principal, 'batch', contents, key);
    return { output: { success: true, events: docs.map((doc) => this.answerOf(doc)), ledger: docs.map((doc) => this.receiptOf(doc)) }, replayed };
  }

  /** A stored event as a write answers it; one removed since (a replay's) by its id and removal alone. */
  private answerOf(doc: StoredEvent): TCreateEventOutput['event'] {
    return isTombstone(doc) ? { id: doc._id, removed: doc.removed, removed_by: doc.removed_by } : toEvent(doc);
  }

  private receiptOf(doc: StoredEvent): TCreateEventOutput['ledger'] {
    return isTombstone(doc) ? { seq: doc.seq, leaf_index: doc.seq - 1, removed: true } : this.ledger.receipt(doc);
  }

  private store(principal: ApiKeyPrincipal, kind: WriteKind, contents: EventContent[], key: string | undefined): Promise<Written> {
    if (key !== undefined) return this.idempotent.write(principal, key, kind, contents);
    const drafts = draftsOf(principal.tenant, contents, freshStamp(contents.length, this.clock.now(), principal.keyId));
    return this.ingest.write({ drafts, keyHash: principal.keyHash, capExempt: false }).then((docs) => ({ docs, replayed: false }));
  }

  /** The event a create body describes; a metadata field over its limit is added to `problems`. */
  private contentOf(tenant: string, input: TCreateEventInput, field: string, problems: string[]): EventContent {
    // organization_id is stored and returned as given, but the event stays in the key's tenant (docs/api.md, "organization_id").
    const content = contentOf(input, tenant);
    if (Buffer.byteLength(content.metadata) > this.limits.metadataBytes) problems.push(field);
    return content;
  }

  private metadataTooLarge(fields: string[]): AppError {
    return new AppError('VALIDATION_FAILED', `Invalid request: metadata must be at most ${this.limits.metadataBytes} bytes as JSON`, { fields });
  }

  async get(principal: Principal, id: string): Promise<TEvent> {
    // Not a UUID cannot exist; answering 404 keeps "malformed" and "someone else's" indistinguishable.
    const doc = isEventId(id) ? await this.readerFor(principal).get(id) : null;
    if (!doc || !visibleTo(principal, doc)) throw new AppError('EVENT_NOT_FOUND', MESSAGES.eventNotFound);
    return toEvent(doc);
  }

  async list(principal: Principal, input: TListEventsInput): Promise<TListEventsOutput> {
    const query = queryFor(principal, input);
    const after = input.cursor === undefined ? undefined : decodeCursor(input.cursor);
    const { rows, hasMore } = await this.readerFor(principal).page(query, { limit: input.limit ?? DEFAULT_PAGE_SIZE, maxBytes: this.limits.listPageBytes }, after);
    const last: EventDoc | undefined = rows[rows.length - 1];
    return {
      data: rows.map(toEvent),
      has_more: hasMore,
      next_cursor: hasMore && last ? encodeCursor({ timestamp: last.ts, id: last._id }) : null,
    };
  }

  /**
   * Every matching event, newest first, as a stream that holds one of the organization's export slots
   * until it closes, pinned to one tree of the ledger: events with a sequence number up to `treeSize`,
   * by default the newest stored when the export starts (so that events written meanwhile do not slip
   * in), which it answers beside the stream. The first batch is read before this returns, so a query
   * that fails at all fails here, where the caller can still answer with an error; a later failure, or
   * running past the time limit, errors the stream. Destroying the stream (or leaving a `for await`
   * early) closes the cursor.
   */
  async export(principal: Principal, filters: TEventFilters, treeSize?: number): Promise<{ docs: Readable; treeSize: number }> {
    const query = queryFor(principal, filters);
    const reader = this.readerFor(principal);
    const release = await this.exportSlots.acquire(principal.tenant);
    const cursor = reader.stream(query);
    let size: number;
    try {
      // Not checked against the stored events: an export pinned to a signed tree whose events were
      // deleted must still be made, so that verifying it names what is missing.
      size = treeSize ?? (await reader.newestSeq());
      await cursor.hasNext();
    } catch (error) {
      release();
      await cursor.close().catch(() => undefined);
      throw error;
    }
    // Kept by sequence number here, not in the query: the export's index serves its filters and order.
    const inTree = new Transform({
      objectMode: true,
      transform(doc: EventDoc, _encoding, done) {
        // A row the service did not write (db/rowMacs.ts) is never exported: it is named instead.
        done(null, doc.seq <= size && reader.isOwn(doc) ? doc : undefined);
      },
    });
    // pipeline: a failed cursor errors the stream, and a destroyed stream closes the cursor.
    const docs = pipeline(cursor.stream(), inTree, () => undefined);
    const timer = setTimeout(() => docs.destroy(new Error(`export ran past its time limit of ${this.limits.exportTimeoutMs} ms`)), this.limits.exportTimeoutMs);
    // Ended, failed or destroyed: the cursor stream does not always emit 'close' after 'end'.
    finished(docs, () => {
      clearTimeout(timer);
      release();
    });
    return { docs, treeSize: size };
  }
}
