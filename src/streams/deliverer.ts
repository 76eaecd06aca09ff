/**
 * Delivers every organization's log streams. Each instance reads the list of streams every few seconds
 * and runs the ones assigned to it: by rendezvous hashing of the stream's id over the live instances
 * (src/ingest/instances.ts), so every instance with the same view runs a stream in exactly one place,
 * streams spread over all instances, and when an instance stops or dies its streams move to the others
 * within one scan after it is seen gone (about 5 s after a SIGKILL).
 *
 * A stream's run, one batch at a time, in sequence order: the newest signed checkpoint of the
 * organization's log says how far there is to deliver (only events a checkpoint covers are sent, so
 * every batch carries the checkpoint that proves it), the events after the stream's `delivered_seq` are
 * read and formatted, sent, and `delivered_seq` moves only once the destination acknowledged them. A
 * crash or a restart therefore resumes from the last acknowledged event and never skips one (at least
 * once; the event id is the receiver's key for dropping a repeat). A batch that fails is retried, the
 * same batch, with exponential backoff and full jitter (or what Retry-After asks); the stream is failing
 * from the first failed attempt until one is acknowledged, and keeps its place; failing for longer than
 * the limit counts in the `streams_failing` metric and is logged once. "Retry now" (the stream's
 * `retry_requested_at`, seen at the next scan) ends the current backoff wait. When views of the live instances differ for a moment two instances may run one stream at once:
 * the receiver may then see a batch twice, never a gap.
 *
 * Bounded whatever the backlog: one batch per stream in memory, at most `concurrency` sends at once per
 * instance and two per organization (SendSlots), and the outbound agents' socket limit.
 */
import type { Logger } from 'pino';
import type { StreamDoc, StreamProgressDoc } from '../db/documents';
import type { StreamStore } from '../db/streamStore';
import type { Clock } from '../domain/time';
import type { StreamOptions, TStreamDestinationInput } from '../domain/stream';
import { toOcsf } from '../domain/streamFormats';
import type { Instances } from '../ingest/instances';
import type { LedgerReader } from '../ledger/reader';
import type { DeliveryBatch, Destination } from './batch';
import { DatadogDestination } from './destinations/datadog';
import { S3Destination } from './destinations/s3';
import { SplunkDestination } from './destinations/splunk';
import { WebhookDestination } from './destinations/webhook';
import { type DeliveryError, OutboundHttp, toDeliveryError } from './outboundHttp';
import type { SecretBox } from './secretBox';
import type { EventSource } from './eventSource';

const HISTORY_MINUTES = 60;
/** How long a stop waits for sends in flight before cutting them off. */
const STOP_GRACE_MS = 1000;
/** The least time between two attempts of a failing stream, however often "Retry now" is asked. */
const MIN_RETRY_GAP_MS = 1000;
/** How far ahead of this instance's clock a retry request may be stamped (another instance's clock). */
const RETRY_CLOCK_SKEW_MS = 60_000;

/**
 * When "Retry now" was last asked of a stream, in ms, or null: a value that is not a time, or one stamped
 * further in the future than clocks differ (written behind the service's back), is no request, so it can
 * neither crash a scan nor silence the requests that come after it.
 */
function retryRequestOf(doc: StreamDoc, now: Date): number | null {
  const at: unknown = doc.retry_requested_at;
  if (!(at instanceof Date)) return null;
  const ms = at.getTime();
  return Number.isFinite(ms) && ms <= now.getTime() + RETRY_CLOCK_SKEW_MS ? ms : null;
}
const FIRST_BACKOFF_MS = 1000;

/** Wait before attempt `failures` + 1: full jitter over an exponential bound (AWS's "full jitter"). */
export function backoffMs(failures: number, maxMs: number, random = Math.random): number {
  const bound = Math.min(maxMs, FIRST_BACKOFF_MS * 2 ** Math.min(failures - 1, 30));
  return Math.round(bound / 2 + random() * (bound / 2));
}

/** Counts for the metrics, bumped as deliveries end. */
export interface StreamStats {
  running: number;
  /** Streams run here now that are marked failing. */
  failing: number;
  batches: number;
  events: number;
  failures: number;
}

/** Builds a stream's destination from its configuration and opened secrets. */
export function destinationOf(http: OutboundHttp, destination: TStreamDestinationInput, signingSecret: string | undefined): Destination {
  switch (destination.type) {
    case 'webhook':
      if (!signingSecret) throw new Error('a webhook stream without its signing secret');
      return new WebhookDestination(http, destination.url, signingSecret);
    case 'splunk':
      return new SplunkDestination(http, destination, destination.token);
    case 'datadog':
      return new DatadogDestination(http, destination, destination.api_key);
    case 's3':
      return new S3Destination(http, destination, destination.secret_access_key);
  }
}

/**
 * Sends in flight on this instance: at most `size` in all and `perTenant` per organization, granted in
 * arrival order among the eligible, so destinations that hang (up to the timeout each, then backing off)
 * hold a few places of their own organization's and cannot take every place from the others.
 */
export class SendSlots {
  private inUse = 0;
  private readonly byTenant = new Map<string, number>();
  private readonly waiting: { tenant: string; grant: () => void }[] = [];

  constructor(
    private readonly size: number,
    private readonly perTenant: number,
  ) {}

  private eligible(tenant: string): boolean {
    return this.inUse < this.size && (this.byTenant.get(tenant) ?? 0) < this.perTenant;
  }

  private grant(tenant: string): void {
    this.inUse++;
    this.byTenant.set(tenant, (this.byTenant.get(tenant) ?? 0) + 1);
  }

  async take(tenant: string): Promise<void> {
    // Whenever a place is given back it goes to the first eligible waiter, so one eligible now jumps no one.
    if (this.eligible(tenant)) {
      this.grant(tenant);
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push({ tenant, grant: resolve }));
  }

  give(tenant: string): void {
    this.inUse--;
    const left = (this.byTenant.get(tenant) ?? 1) - 1;
    if (left > 0) this.byTenant.set(tenant, left);
    else this.byTenant.delete(tenant);
    const next = this.waiting.findIndex((w) => this.eligible(w.tenant));
    if (next === -1) return;
    const [waiter] = this.waiting.splice(next, 1);
    if (!waiter) return;
    this.grant(waiter.tenant);
    waiter.grant();
  }
}

/** Sends in flight per organization on one instance. */
const SENDS_PER_TENANT = 2;

export interface StreamDelivererOptions {
  store: StreamStore;
  /** Events for the runs: recently stored or read, else from the database. */
  events: EventSource;
  ledger: LedgerReader;
  instances: Instances;
  box: SecretBox;
  options: StreamOptions;
  clock: Clock;
  log: Logger;
}

export class StreamDeliverer {
  readonly stats: StreamStats = { running: 0, failing: 0, batches: 0, events: 0, failures: 0 };
  readonly http: OutboundHttp;
  private readonly runs = new Map<string, StreamRun>();
  private readonly slots: SendSlots;
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | null = null;
  private stopped = true;

  private readonly store: StreamStore;
  readonly events: EventSource;
  private readonly ledger: LedgerReader;
  private readonly instances: Instances;
  private readonly box: SecretBox;
  readonly options: StreamOptions;
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(options: StreamDelivererOptions) {
    ({
      store: this.store,
      events: this.events,
      ledger: this.ledger,
      instances: this.instances,
      box: this.box,
      options: this.options,
      clock: this.clock,
      log: this.log,
    } = options);
    this.http = new OutboundHttp({ allowPrivate: this.options.allowPrivate, timeoutMs: this.options.timeoutMs, maxSockets: Math.max(this.options.concurrency * 2, 8) });
    this.slots = new SendSlots(this.options.concurrency, SENDS_PER_TENANT);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    void this.scan();
    this.timer = setInterval(() => void this.scan(), this.options.scanIntervalMs);
    this.timer.unref();
  }

  /**
   * Stops every run: each ends after its current step, and a send still in flight after a second is cut
   * off (its batch was not acknowledged, so whoever runs the stream next sends it again), so that a
   * hanging destination cannot hold a shutdown for its whole timeout.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.scanning;
    const runs = Promise.all([...this.runs.values()].map((run) => run.stop()));
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([runs, new Promise((resolve) => { grace = setTimeout(resolve, STOP_GRACE_MS); })]);
    clearTimeout(grace);
    this.http.close();
    await runs;
    this.runs.clear();
  }

  /** Reads the streams now (the API calls it after a change, so a new stream starts without waiting for the next scan). */
  scan(): Promise<void> {
    // One stream's row that nothing here expected must not take the scan, or the process, with it.
    this.scanning ??= this.scanOnce()
      .catch((error: unknown) => this.log.error({ error: String(error) }, 'the log streams scan failed; it runs again at the next interval'))
      .finally(() => { this.scanning = null; });
    return this.scanning;
  }

  private async scanOnce(): Promise<void> {
    let streams: StreamDoc[];
    try {
      streams = await this.store.all();
    } catch (error) {
      this.log.warn({ error: String(error) }, 'could not read the log streams');
      return;
    }
    // Stopped while the list was read: start nothing.
    if (this.stopped) return;
    const wanted = new Map<string, StreamDoc>();
    for (const doc of streams) if (!doc.paused && this.instances.runs(doc._id)) wanted.set(doc._id, doc);
    this.events.keepFor(new Set([...wanted.values()].map((doc) => doc.tenant)));
    for (const [id, run] of this.runs) {
      if (!wanted.has(id)) {
        this.runs.delete(id);
        void run.stop();
      }
    }
    for (const [id, doc] of wanted) {
      try {
        const running = this.runs.get(id);
        if (running) {
          running.retryIfAsked(doc);
          continue;
        }
        const run = new StreamRun(doc, this, this.store, this.ledger, this.options, this.clock, this.log.child({ stream: id, tenant: doc.tenant }));
        this.runs.set(id, run);
        run.start();
      } catch (error) {
        this.log.error({ stream: id, tenant: doc.tenant, error: String(error) }, 'cannot run the log stream; its row is not as this service wrote it');
      }
    }
    this.stats.running = this.runs.size;
    this.stats.failing = [...this.runs.values()].filter((run) => run.failing).length;
  }

  /** The destination of a stream, with its secrets opened. */
  destination(doc: StreamDoc): Destination {
    const secrets = this.box.open(doc._id, doc.sealed);
    return destinationOf(this.http, { ...doc.destination, ...secrets } as TStreamDestinationInput, secrets.signing_secret);
  }

  /**
   * Sends one batch in its turn; resolves with the status that acknowledged it (Destination.send). With
   * `current`, asked once the turn has come (a turn may take a while): a batch it finds stale (events
   * removed since it was read) is not sent, and null is answered.
   */
  async send(destination: Destination, batch: DeliveryBatch, current?: () => Promise<boolean>): Promise<number | null> {
    await this.slots.take(batch.tenant);
    try {
      if (current && !(await current())) return null;
      return await destination.send(batch);
    } finally {
      this.slots.give(batch.tenant);
    }
  }

  /** Ends the backoff wait of a stream run here now (the API calls it on "Retry now"; other instances see the request at their next scan). */
  retryNow(doc: StreamDoc): void {
    this.runs.get(doc._id)?.retryIfAsked(doc);
  }

  /** A run ended by itself (the stream was deleted): forget it, so a later scan may start it again. */
  ended(id: string, run: StreamRun): void {
    if (this.runs.get(id) === run) this.runs.delete(id);
  }
}

/** One stream's delivery loop on this instance. */
class StreamRun {
  /** Whether the stream's last saved progress marks it failing. */
  failing = false;
  private stopped = false;
  private wake: (() => void) | null = null;
  private done: Promise<void> = Promise.resolve();
  /** The newest retry request this run has answered: an older one (seen again at each scan) does nothing. */
  private retryAnswered: number;
  /** Whether the run is waiting out a backoff (not polling for new events). */
  private backingOff = false;

  constructor(
    private readonly doc: StreamDoc,
    private readonly owner: StreamDeliverer,
    private readonly store: StreamStore,
    private readonly ledger: LedgerReader,
    private readonly options: StreamOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.retryAnswered = retryRequestOf(doc, clock.now()) ?? 0;
  }

  /** A retry request newer than the last one answered ends the backoff wait now: the batch is sent again at once. */
  retryIfAsked(doc: StreamDoc): void {
    const requested = retryRequestOf(doc, this.clock.now());
    if (requested === null || requested <= this.retryAnswered) return;
    this.retryAnswered = requested;
    if (this.backingOff) {
      this.log.info('stream retried now, as asked');
      this.wake?.();
    }
  }

  start(): void {
    this.done = this.loop().catch((error: unknown) => {
      this.log.error({ error: String(error) }, 'stream delivery stopped on an unexpected error; it restarts at the next scan');
    }).finally(() => { this.owner.ended(this.doc._id, this); });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.done;
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this.wake = null; resolve(); }, ms);
      this.wake = () => { clearTimeout(timer); this.wake = null; resolve(); };
    });
  }

  private async loop(): Promise<void> {
    const { doc } = this;
    let destination: Destination;
    try {
      destination = this.owner.destination(doc);
    } catch (error) {
      this.log.error({ error: String(error) }, 'cannot open the stream\'s destination');
      const progress = await this.load();
      await this.failed(progress, toDeliveryError(error), 1, this.options.maxBackoffMs);
      await this.sleep(this.options.maxBackoffMs);
      return;
    }
    let progress = await this.load();
    let failures = 0;
    let pending: DeliveryBatch | null = null;
    /** The organization's removal mark, read before the events of `pending` were (EventSource.removals). */
    let mark: string | null | undefined;
    while (!this.stopped) {
      try {
        // Null is a mark too (no removal yet): only the first round reads it here.
        if (mark === undefined) mark = await this.owner.events.removals(doc.tenant);
        pending ??= await this.nextBatch(progress, destination);
      } catch (error) {
        this.log.warn({ error: String(error) }, 'could not read the stream\'s next events; retrying');
        await this.sleep(this.options.pollMs);
        continue;
      }
      if (!pending) {
        const skipped = await this.skipRemoved(progress).catch(() => null);
        if (skipped) {
          progress = skipped;
          continue;
        }
        await this.sleep(this.options.pollMs);
        continue;
      }
      // Events removed since the batch was read are never sent (a retry's included): checked when its
      // turn to send has come, it is read again if the organization's removal mark moved meanwhile.
      const batch = { stale: false };
      const current = async () => {
        const now = await this.owner.events.removals(doc.tenant);
        batch.stale = now !== mark;
        mark = now;
        return !batch.stale;
      };
      try {
        await this.owner.send(destination, pending, current);
      } catch (error) {
        const failure = toDeliveryError(error);
        failures++;
        this.owner.stats.failures++;
        const backoff = backoffMs(failures, this.options.maxBackoffMs);
        const wait = Math.min(Math.max(backoff, failure.retryAfterMs ?? 0), Math.max(this.options.maxBackoffMs, failure.retryAfterMs ?? 0));
        progress = await this.failed(progress, failure, failures, wait);
        const failedAt = performance.now();
        this.backingOff = true;
        await this.sleep(wait);
        this.backingOff = false;
        // Woken early by "Retry now": however often it is asked, a destination gets at most one attempt a second.
        const since = performance.now() - failedAt;
        if (since < MIN_RETRY_GAP_MS) await this.sleep(MIN_RETRY_GAP_MS - since);
        continue;
      }
      if (batch.stale) {
        pending = null;
        continue;
      }
      failures = 0;
      this.owner.stats.batches++;
      this.owner.stats.events += pending.items.length;
      progress = await this.delivered(progress, pending);
      pending = null;
    }
  }

  private async load(): Promise<StreamProgressDoc> {
    const found = await this.store.progress(this.doc._id);
    return found ?? { _id: this.doc._id, tenant: this.doc.tenant, delivered_seq: this.doc.start_seq - 1, last_delivery_at: null, last_error: null, failing_since: null, failing: false, history: [] };
  }

  /** The next events to send, as one batch within the destination's limits; null when there are none yet. */
  private async nextBatch(progress: StreamProgressDoc, destination: Destination): Promise<DeliveryBatch | null> {
    const checkpoint = await this.ledger.of(this.doc.tenant).newest();
    if (!checkpoint || checkpoint.size <= progress.delivered_seq) return null;
    const from = progress.delivered_seq + 1;
    const docs = await this.owner.events.between(this.doc.tenant, from, Math.min(checkpoint.size, progress.delivered_seq + destination.limits.maxEvents));
    if (docs.length === 0) return null;
    const loggedAt = this.clock.now();
    const items: string[] = [];
    const times: number[] = [];
    let bytes = 2;
    for (const event of docs) {
      const item = this.doc.format === 'json' ? this.owner.events.jsonItem(event) : JSON.stringify(toOcsf(this.owner.events.item(event), this.doc.tenant, loggedAt));
      bytes += item.length + 1;
      if (items.length > 0 && bytes > destination.limits.maxBytes) break;
      items.push(item);
      times.push(event.ts.getTime());
    }
    const first = docs[0];
    if (!first) return null;
    return { streamId: this.doc._id, tenant: this.doc.tenant, first: from, last: from + items.length - 1, items, times, receivedAt: first.received_at, checkpoint: { size: checkpoint.size, note: checkpoint.note } };
  }

  /**
   * Past events removed under retention (pruned or erased, a signed entry of the log names each) where
   * the stream stands: never delivered, never waited for. Null when the next event is not one.
   */
  private async skipRemoved(progress: StreamProgressDoc): Promise<StreamProgressDoc | null> {
    const checkpoint = await this.ledger.of(this.doc.tenant).newest();
    const from = progress.delivered_seq + 1;
    if (!checkpoint || checkpoint.size < from) return null;
    const removed = await this.store.removedRun(this.doc.tenant, from, Math.min(checkpoint.size, from + 9_999));
    if (removed === 0) return null;
    const next: StreamProgressDoc = { ...progress, delivered_seq: from + removed - 1 };
    this.log.info({ from, to: next.delivered_seq }, 'stream skipped events removed under retention');
    await this.save(next);
    return next;
  }

  private async delivered(progress: StreamProgressDoc, batch: DeliveryBatch): Promise<StreamProgressDoc> {
    const now = this.clock.now();
    // Recovered: the error that was is in the history's failed attempts, no longer shown as the stream's.
    const next: StreamProgressDoc = { ...progress, delivered_seq: batch.last, last_delivery_at: now, last_error: null, last_error_at: null, failing_since: null, next_attempt_at: null, failing: false, history: bump(progress.history, now, batch.items.length, 0) };
    await this.save(next);
    return next;
  }

  private async failed(progress: StreamProgressDoc, failure: DeliveryError, failures: number, waitMs: number): Promise<StreamProgressDoc> {
    const now = this.clock.now();
    const since = progress.failing_since ?? now;
    const next: StreamProgressDoc = {
      ...progress,
      last_error: failure.message.slice(0, 500),
      last_error_at: now,
      failing_since: since,
      next_attempt_at: new Date(now.getTime() + waitMs),
      failing: now.getTime() - since.getTime() >= this.options.failingAfterMs,
      history: bump(progress.history, now, 0, 1),
    };
    if (next.failing && !progress.failing) this.log.warn({ error: failure.message, failures, failing_since: since }, 'stream failing for longer than STREAM_FAILING_AFTER_MS: its destination has refused or been unreachable since failing_since');
    await this.save(next);
    return next;
  }

  /** Saves progress; a save that fails is retried with the next one (the events are then delivered again: at least once). */
  private async save(progress: StreamProgressDoc): Promise<void> {
    this.failing = progress.failing;
    try {
      await this.store.saveProgress(progress);
    } catch (error) {
      this.log.warn({ error: String(error) }, 'could not save the stream\'s progress');
    }
  }
}

/** Adds to this minute's counts, dropping minutes older than an hour. */
function bump(history: StreamProgressDoc['history'], now: Date, delivered: number, failed: number): StreamProgressDoc['history'] {
  const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
  const kept = history.filter((h) => now.getTime() - h.minute.getTime() < HISTORY_MINUTES * 60_000);
  const last = kept[kept.length - 1];
  if (last && last.minute.getTime() === minute.getTime()) return [...kept.slice(0, -1), { minute, delivered: last.delivered + delivered, failed: last.failed + failed }];
  return [...kept, { minute, delivered, failed }];
}
