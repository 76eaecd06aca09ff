/**
 * Log streams as an organization manages them (REST with an API key, the dashboard with a session):
 * create (a webhook's signing secret is shown once, in the answer), list with each stream's state and
 * lag, pause, resume, delete, and a test delivery. Delivery itself is src/streams/deliverer.ts.
 */
import { randomUUID } from 'node:crypto';
import type { StreamDoc, StreamProgressDoc } from '../db/documents';
import type { EventReader } from '../db/eventReader';
import type { StreamStore } from '../db/streamStore';
import { AppError } from '../domain/errors';
import { MAX_STREAMS_PER_ORG, splitSecrets, type StreamState, type TCreateStreamInput, type TStream, type TStreamTestResult } from '../domain/stream';
import type { Clock } from '../domain/time';
import type { StreamDeliverer } from '../streams/deliverer';
import { newWebhookSecret } from '../streams/destinations/webhook';
import { DeliveryError } from '../streams/outboundHttp';
import type { SecretBox } from '../streams/secretBox';
import type { Principal } from './auth';
import { actorOf, type SelfAudit } from './selfAudit';

const notFound = () => new AppError('STREAM_NOT_FOUND', 'Stream not found');

export class StreamService {
  constructor(
    private readonly store: StreamStore,
    private readonly events: (tenant: string) => EventReader,
    private readonly box: SecretBox,
    private readonly deliverer: StreamDeliverer,
    private readonly audit: SelfAudit,
    private readonly clock: Clock,
  ) {}

  async create(principal: Principal, input: TCreateStreamInput): Promise<TStream & { signing_secret: string | null }> {
    const { destination, secrets } = splitSecrets(input.destination);
    const url = input.destination.type === 's3' ? input.destination.endpoint : input.destination.url;
    const problem = url === undefined ? null : this.deliverer.http.problemWith(url);
    if (problem) throw new AppError('VALIDATION_FAILED', `Invalid request: destination.${input.destination.type === 's3' ? 'endpoint' : 'url'} ${problem}`, { fields: [`destination.${input.destination.type === 's3' ? 'endpoint' : 'url'}`] });
    const signingSecret = input.destination.type === 'webhook' ? newWebhookSecret() : null;
    if (signingSecret) secrets.signing_secret = signingSecret;
    const id = randomUUID();
    const streams = this.store.forTenant(principal.tenant);
    const startSeq = input.start_seq ?? (await this.events(principal.tenant).newestSeq()) + 1;
    const doc: Omit<StreamDoc, 'slot'> = {
      _id: id,
      tenant: principal.tenant,
      name: input.name,
      destination,
      format: input.format,
      start_seq: startSeq,
      sealed: this.box.seal(id, secrets),
      paused: false,
      created_at: this.clock.now(),
    };
    if (!(await streams.insert(doc, MAX_STREAMS_PER_ORG))) {
      throw new AppError('STREAM_LIMIT_REACHED', `An organization can have at most ${MAX_STREAMS_PER_ORG} streams; delete one first`);
    }
    await this.audit.record(principal.tenant, actorOf(principal), 'audit_ledger.stream.created', { type: 'stream', id, name: input.name }, { destination_type: destination.type, format: input.format, start_seq: startSeq });
    void this.deliverer.scan();
    const [view] = await this.views(principal.tenant, [{ ...doc, slot: 0 }]);
    return { ...(view as TStream), signing_secret: signingSecret };
  }

  async list(principal: Principal): Promise<{ data: TStream[] }> {
    return { data: await this.views(principal.tenant, await this.store.forTenant(principal.tenant).list()) };
  }

  async get(principal: Principal, id: string): Promise<TStream> {
    const doc = await this.store.forTenant(principal.tenant).get(id);
    if (!doc) throw notFound();
    return (await this.views(principal.tenant, [doc]))[0] as TStream;
  }

  /** Pauses or resumes; the delivering instance sees it at its next scan (a few seconds) and keeps the stream's place. */
  async setPaused(principal: Principal, id: string, paused: boolean): Promise<TStream> {
    const doc = await this.store.forTenant(principal.tenant).setPaused(id, paused);
    if (!doc) throw notFound();
    void this.deliverer.scan();
    await this.audit.record(principal.tenant, actorOf(principal), paused ? 'audit_ledger.stream.paused' : 'audit_ledger.stream.resumed', { type: 'stream', id, name: doc.name });
    return (await this.views(principal.tenant, [doc]))[0] as TStream;
  }

  async remove(principal: Principal, id: string): Promise<{ deleted: true }> {
    if (!(await this.store.forTenant(principal.tenant).remove(id))) throw notFound();
    void this.deliverer.scan();
    await this.audit.record(principal.tenant, actorOf(principal), 'audit_ledger.stream.deleted', { type: 'stream', id });
    return { deleted: true };
  }

  /**
   * Makes a failing stream try its destination now instead of waiting out its backoff: the instance
   * delivering it answers at once when it is this one, else at its next scan (a few seconds). The stream's
   * state then follows that attempt. A paused stream stays paused (resume it); one not failing has no
   * wait to end.
   */
  async retryNow(principal: Principal, id: string): Promise<TStream> {
    const at = this.clock.now();
    const doc = await this.store.forTenant(principal.tenant).requestRetry(id, at);
    if (!doc) throw notFound();
    this.deliverer.retryNow(doc);
    void this.deliverer.scan();
    return (await this.views(principal.tenant, [doc]))[0] as TStream;
  }

  /**
   * Sends one test item (not an event of the log) to the destination now, and says what it answered: its
   * HTTP status whenever it answered, 2xx included. A test is not a delivery, so it does not change the
   * stream's state; when it is acknowledged, a failing stream is retried now (as retryNow), and that
   * attempt with the real events decides.
   */
  async test(principal: Principal, id: string): Promise<TStreamTestResult> {
    const doc = await this.store.forTenant(principal.tenant).get(id);
    if (!doc) throw notFound();
    const now = this.clock.now();
    const item = { test: true, stream_id: doc._id, message: 'Audit Ledger test delivery: not an event of the log', sent_at: now.toISOString() };
    try {
      const status = await this.deliverer.send(this.deliverer.destination(doc), { streamId: doc._id, tenant: doc.tenant, first: 0, last: 0, items: [JSON.stringify(item)], times: [now.getTime()], receivedAt: now, checkpoint: null });
      const failing = !doc.paused && ((await this.store.forTenant(principal.tenant).progress([doc._id])).get(doc._id)?.failing_since ?? null) !== null;
      if (failing) await this.retryNow(principal, id);
      return { ok: true, status, error: null, retrying: failing };
    } catch (error) {
      const failure = error instanceof DeliveryError ? error : new DeliveryError(error instanceof Error ? error.message : String(error));
      return { ok: false, status: failure.status, error: failure.message, retrying: false };
    }
  }

  private async views(tenant: string, docs: StreamDoc[]): Promise<TStream[]> {
    if (docs.length === 0) return [];
    const streams = this.store.forTenant(tenant);
    const [progress, newest] = await Promise.all([streams.progress(docs.map((d) => d._id)), this.events(tenant).newestSeq()]);
    const now = this.clock.now();
    return Promise.all(docs.map(async (doc) => {
      const p: StreamProgressDoc | undefined = progress.get(doc._id);
      const delivered = p?.delivered_seq ?? doc.start_seq - 1;
      const lag = Math.max(0, newest - delivered);
      const oldest = lag > 0 ? await streams.eventAt(delivered + 1) : null;
      // Failing from the first failed attempt: a person looking should not see green while every delivery is refused.
      const failing = (p?.failing_since ?? null) !== null;
      const state: StreamState = doc.paused ? 'paused' : failing ? 'failing' : 'active';
      const nextAttempt = isoOf(p?.next_attempt_at);
      return {
        id: doc._id,
        name: doc.name,
        destination: doc.destination,
        format: doc.format,
        state,
        start_seq: doc.start_seq,
        delivered_seq: delivered,
        lag_events: lag,
        lag_seconds: oldest ? Math.max(0, (now.getTime() - oldest.received_at.getTime()) / 1000) : null,
        last_delivery_at: isoOf(p?.last_delivery_at),
        last_error: failing ? (p?.last_error ?? null) : null,
        last_error_at: failing ? isoOf(p?.last_error_at) : null,
        failing_since: isoOf(p?.failing_since),
        // Past means an attempt is under way (a slow destination) or about to be: no time to count down to.
        next_attempt_at: failing && !doc.paused && nextAttempt !== null && nextAttempt > now.toISOString() ? nextAttempt : null,
        created_at: doc.created_at.toISOString(),
        history: (p?.history ?? []).map((h) => ({ minute: h.minute.toISOString(), delivered: h.delivered, failed: h.failed })),
      };
    }));
  }
}

/** A progress time as ISO 8601, or null: a value that is not a valid date (written by hand) reads as none. */
function isoOf(value: unknown): string | null {
  return value instanceof Date && Number.isFinite(value.getTime()) ? value.toISOString() : null;
}
