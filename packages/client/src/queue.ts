/**
 * Delivery that never loses or doubles an event: `record()` puts an event in a bounded queue and resolves
 * once the service stored it, with its receipt. Events go out in batches (`POST /v1/events/batch`) when
 * `maxBatch` are waiting, `flushIntervalMs` after the first of them, on `flush()`, and, in Node, when the
 * process runs out of other work (`beforeExit`).
 *
 * - **Never doubled**: each batch gets its own Idempotency-Key when it is formed and keeps it, with the
 *   same body, through every retry; the service stores a batch once per key (docs/api.md, 17), so a retry
 *   after a lost answer (a timeout, a restart between storing and answering) answers what was stored.
 * - **Never lost**: a network error, a 5xx or a 429 other than the monthly cap is retried with
 *   exponential backoff and full jitter, never sooner than `Retry-After`, for as long as it takes. What
 *   the service refuses for good (a 400 naming an event, 401, 403, the monthly cap) rejects the events
 *   it concerns with the API's error; the rest of their batch is sent again as a batch of its own.
 * - **Bounded**: at most `capacity` events are held (queued or being sent). Past it `record()` waits for
 *   room; past as many waiting again it is refused at once with `QueueFullError`. Nothing is dropped
 *   silently.
 * - **In order**: with `concurrency` 1 (the default) events are stored in the order recorded.
 * - **Signed once**: with the client's `producer`, each event's timestamp is fixed when it is recorded
 *   and it is signed before it joins a batch; every retry sends the signed body as it is.
 */
import { type BackoffOptions, retryDelayMs } from './backoff.ts';
import { AuditLedgerError, NetworkError, QueueClosedError, QueueFullError } from './errors.ts';
import type { ProducerSigner } from './producer.ts';
import type { AuditLedgerClient } from './rest.ts';
import { differencesFromSent } from './storedAsSent.ts';
import type { EventInput, Recorded } from './types.ts';
import { VerificationError } from './verify.ts';

/** The API's largest batch (`BATCH_MAX_EVENTS`). */
const API_MAX_BATCH = 1000;

export interface QueueOptions {
  /** Events per batch (default 100, at most 1,000). */
  maxBatch?: number;
  /** How long the first queued event waits for others before its batch goes (default 500 ms). */
  flushIntervalMs?: number;
  /** Events held at most, queued or being sent (default 10,000). */
  capacity?: number;
  /** Batches sent at once (default 1: events are stored in the order they were recorded). */
  concurrency?: number;
  backoff?: BackoffOptions;
  /** Node: send what is queued when the process would otherwise exit (default true). */
  flushOnExit?: boolean;
  /** Told of each retry (for logs and metrics). */
  onRetry?: (error: Error, attempt: number, delayMs: number) => void;
}

interface Pending {
  /** What is sent: the event as recorded, then, with a producer, as signed. */
  event: EventInput;
  /** Whether `event` can be sent (false while its signature is being made). */
  ready: boolean;
  resolve: (recorded: Recorded) => void;
  reject: (error: Error) => void;
  settled: Promise<void>;
}

/** What a Node process offers for flushing on exit, looked up at run time (the package also runs in browsers). */
interface ExitHooks {
  on(event: 'beforeExit', listener: () => void): unknown;
  off(event: 'beforeExit', listener: () => void): unknown;
}

/**
 * Open queues that flush at exit, behind one `beforeExit` listener however many there are (one each
 * would pass Node's limit of ten listeners and warn).
 */
const flushedAtExit = new Set<{ flush(): Promise<void> }>();
const flushAllAtExit = () => {
  for (const queue of flushedAtExit) void queue.flush();
};

function exitHooks(): ExitHooks | null {
  const hooks = (globalThis as { process?: ExitHooks }).process;
  return typeof hooks?.on === 'function' ? hooks : null;
}

function flushAtExit(queue: { flush(): Promise<void> }, on: boolean): void {
  const hooks = exitHooks();
  if (!hooks) return;
  const had = flushedAtExit.size > 0;
  if (on) flushedAtExit.add(queue);
  else flushedAtExit.delete(queue);
  if (!had && flushedAtExit.size > 0) hooks.on('beforeExit', flushAllAtExit);
  if (had && flushedAtExit.size === 0) hooks.off('beforeExit', flushAllAtExit);
}

/**
 * A recorded event and its promise. `settled` is a promise of its own, not one chained on the caller's:
 * a caller that does not handle a rejection still sees it reported as unhandled.
 */
function pending(event: EventInput): { item: Pending; promise: Promise<Recorded> } {
  let done!: () => void;
  const settled = new Promise<void>((res) => {
    done = res;
  });
  let resolve!: (recorded: Recorded) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<Recorded>((res, rej) => {
    resolve = (recorded) => {
      res(recorded);
      done();
    };
    reject = (error) => {
      rej(error);
      done();
    };
  });
  return { item: { event, ready: true, resolve, reject, settled }, promise };
}

/** A whole number option, or its default (a `Number(process.env.X)` may be NaN). */
const whole = (value: number | undefined, fallback: number) => (value !== undefined && Number.isFinite(value) ? Math.floor(value) : fallback);

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Positions a batch's 400 names (`events[3].actor.id` → 3). */
function positionsNamed(error: AuditLedgerError, size: number): Set<number> {
  const positions = new Set<number>();
  for (const field of error.fields) {
    const match = /^events\[(\d+)\]/.exec(field);
    if (match) positions.add(Number(match[1]));
  }
  return new Set([...positions].filter((p) => p < size));
}

export class DeliveryQueue {
  private readonly maxBatch: number;
  private readonly flushIntervalMs: number;
  private readonly capacity: number;
  private readonly concurrency: number;
  private readonly options: QueueOptions;
  private readonly keyPrefix = globalThis.crypto.randomUUID();
  private batchesFormed = 0;

  private queued: Pending[] = [];
  /** Batches being sent (each with all its events until it settles). */
  private readonly sending = new Set<Pending[]>();
  /** record() calls waiting for room. */
  private waiting: Pending[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** Send what is queued without waiting for a full batch (the interval passed, or a flush asked). */
  private urgent = false;
  private closed = false;

  constructor(private readonly client: AuditLedgerClient, options: QueueOptions = {}) {
    this.options = options;
    this.maxBatch = Math.min(API_MAX_BATCH, Math.max(1, whole(options.maxBatch, 100)));
    this.flushIntervalMs = Math.max(0, whole(options.flushIntervalMs, 500));
    this.capacity = Math.max(this.maxBatch, whole(options.capacity, 10_000));
    this.concurrency = Math.max(1, whole(options.concurrency, 1));
    if (options.flushOnExit !== false) flushAtExit(this, true);
  }

  /** Events held: queued and being sent (not those waiting for room). */
  get size(): number {
    let size = this.queued.length;
    for (const batch of this.sending) size += batch.length;
    return size;
  }

  /**
   * Records `event`: resolves once the service stored it, with its receipt. The event is copied as JSON
   * now: changing the object afterwards changes nothing sent (a retry must send the very body its
   * Idempotency-Key was first sent with), and one that JSON cannot hold is refused here, alone. With the
   * client's producer, its timestamp is fixed now (if it gives none) and it is signed before it is sent;
   * one that cannot be signed (a malformed timestamp) is refused alone.
   */
  record(event: EventInput): Promise<Recorded> {
    if (this.closed) return Promise.reject(new QueueClosedError('the queue is closed'));
    let copy: EventInput;
    try {
      copy = JSON.parse(JSON.stringify(event)) as EventInput;
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    const { item, promise } = pending(copy);
    if (this.size < this.capacity && this.waiting.length === 0) this.queued.push(item);
    else if (this.waiting.length < this.capacity) this.waiting.push(item);
    else return Promise.reject(new QueueFullError(`the queue holds ${this.capacity} events and as many wait for room`));
    const producer = this.client.producer;
    if (producer && copy.producer_signature == null) this.sign(item, producer);
    this.pump();
    return promise;
  }

  /**
   * Signs a held event; until then it is not sent, nor anything behind it. sign() takes the time at
   * the call, so the timestamp is the one of record(). An event that cannot be signed is dropped and rejected.
   */
  private sign(item: Pending, producer: ProducerSigner): void {
    item.ready = false;
    producer.sign(item.event).then(
      (signed) => {
        item.event = signed;
        item.ready = true;
        this.pump();
      },
      (error: unknown) => {
        this.queued = this.queued.filter((p) => p !== item);
        this.waiting = this.waiting.filter((p) => p !== item);
        item.reject(error instanceof Error ? error : new Error(String(error)));
        this.pump();
      },
    );
  }

  /** Sends everything recorded so far now; resolves once each of those events is stored or refused. */
  async flush(): Promise<void> {
    const all = [...this.waiting, ...this.queued, ...[...this.sending].flat()].map((p) => p.settled);
    if (all.length === 0) return;
    this.urgent = true;
    this.pump();
    await Promise.all(all);
  }

  /** Refuses further events, sends what is held and waits for it (forever, if the service never answers). */
  async close(): Promise<void> {
    this.closed = true;
    flushAtExit(this, false);
    await this.flush();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private pump(): void {
    while (this.waiting.length > 0 && this.size < this.capacity) this.queued.push(this.waiting.shift() as Pending);
    while (this.sending.size < this.concurrency) {
      // Only events ready to send, from the front: one still being signed holds back those behind it (the order).
      const ready = this.readyAtFront();
      if (ready === 0 || !(this.urgent || ready >= this.maxBatch)) break;
      this.startBatch(this.queued.splice(0, ready));
    }
    if (this.queued.length === 0 && this.waiting.length === 0) this.urgent = false;
    if (this.queued.length > 0 && !this.urgent && this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.urgent = true;
        this.pump();
      }, this.flushIntervalMs);
      // The interval alone keeps no process alive: at exit, `beforeExit` sends what is queued.
      (this.timer as { unref?: () => void }).unref?.();
    }
  }

  /** How many queued events, from the front, are ready to send (at most a batch). */
  private readyAtFront(): number {
    const limit = Math.min(this.queued.length, this.maxBatch);
    let ready = 0;
    while (ready < limit && (this.queued[ready] as Pending).ready) ready++;
    return ready;
  }

  private startBatch(batch: Pending[]): void {
    this.sending.add(batch);
    void this.deliver(batch).finally(() => {
      this.sending.delete(batch);
      this.pump();
    });
  }

  /**
   * Sends one batch until it is stored or refused for good; never throws. A refusal is all or none (the
   * service stored nothing), so what it names is rejected and the rest is sent again, in order, as a
   * batch of its own (a new body: a new key).
   */
  private async deliver(batch: Pending[]): Promise<void> {
    const key = `${this.keyPrefix}-${++this.batchesFormed}`;
    const events = batch.map((p) => p.event);
    /** Whether an earlier try may have been stored (no answer, or a 5xx). */
    let uncertain = false;
    for (let attempt = 1; ; attempt++) {
      try {
        const { recorded } = await this.client.createBatch(events, { idempotencyKey: key });
        batch.forEach((p, i) => {
          const answer = recorded[i] as Recorded;
          // The receipt proves what the service stored: it must be what was sent.
          const changed = differencesFromSent(p.event, answer.event);
          if (changed.length === 0) p.resolve(answer);
          else p.reject(new VerificationError([`event ${answer.event.id}: the service answered it stored with ${changed.join(', ')} other than sent`]));
        });
        return;
      } catch (caught) {
        const error = caught instanceof Error ? caught : new Error(String(caught));
        // After a try that may have been stored, a 429 of the cap may be this retry counted beside it
        // (docs/api.md, 17: "its next retry gets the replay"): retried too, not refused.
        const retry = error instanceof NetworkError || (error instanceof AuditLedgerError && (error.retryable || (uncertain && error.status === 429)));
        if (retry) uncertain ||= error instanceof NetworkError || error.status >= 500;
        if (retry) {
          const delay = retryDelayMs(attempt, error instanceof AuditLedgerError ? error.retryAfterMs : null, this.options.backoff);
          this.options.onRetry?.(error, attempt, delay);
          await sleep(delay);
          continue;
        }
        if (error instanceof AuditLedgerError && batch.length > 1 && error.status === 413) {
          // Too many bytes for one request: the halves go one after the other (an event too large alone is refused alone).
          const half = Math.ceil(batch.length / 2);
          await this.deliver(batch.slice(0, half));
          await this.deliver(batch.slice(half));
          return;
        }
        const named = error instanceof AuditLedgerError && error.status === 400 ? positionsNamed(error, batch.length) : new Set<number>();
        if (named.size === 0 || named.size === batch.length) {
          for (const p of batch) p.reject(error);
          return;
        }
        batch.forEach((p, i) => {
          if (named.has(i)) p.reject(error);
        });
        await this.deliver(batch.filter((_, i) => !named.has(i)));
        return;
      }
    }
  }
}
