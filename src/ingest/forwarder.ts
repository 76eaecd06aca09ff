/**
 * Sends events to the instance that writes their organization, in batches: what one turn of the event
 * loop gathered for an instance goes in one request, with up to 8 requests open to it at once. One
 * keep-alive connection pool serves all instances.
 *
 * The receiving instance answers 200 with one result per event, or a 4xx having written nothing (a
 * stale token, say). Only a batch that reached it and got no answer (a dropped connection, a timeout)
 * has an unknown outcome: its callers get 503, as for an unconfirmed database write.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Logger } from 'pino';
import { AppError } from '../domain/errors';
import { writeUnconfirmed } from './eventWriter';
import type { KeyedWriteUnit } from './writeUnit';
import { FORWARD_PATH, INSTANCE_MAC_HEADER, MAX_FORWARD_EVENTS, parseWire, type TPlacement, unitToWire, ZForwardResponse } from './forwardWire';
import type { InstanceAuth } from './instanceAuth';
import type { Peer } from './instances';

/** The forward did not reach the instance, or it wrote nothing: the event may be written elsewhere. */
export const UNDELIVERED = Symbol('undelivered');

interface Forward {
  unit: KeyedWriteUnit;
  resolve: (outcome: TPlacement[] | typeof UNDELIVERED) => void;
  reject: (error: unknown) => void;
}

interface Lane {
  peer: Peer;
  queue: Forward[];
  /** A send is scheduled for the end of this turn of the event loop. */
  scheduled: boolean;
  inFlight: number;
  /** Resolves the waiters of `idle()` once the lane is empty and quiet. */
  quiet: (() => void)[];
}

type Reply = { delivered: false; reason: string } | { delivered: true; status: number; text: string; mac: string | undefined };

const MAX_IN_FLIGHT = 8;
/** Longer than the receiving writer's own database timeout, so its 503 arrives before ours. */
const TIMEOUT_MS = 30_000;
/** Errors raised before a request could be sent: nothing reached the other instance. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** The forwards of one request: whole batches, up to MAX_FORWARD_EVENTS events unless the first alone is more. */
function takeBatch(queue: Forward[]): Forward[] {
  let events = 0;
  let count = 0;
  while (count < queue.length && (count === 0 || events + (queue[count] as Forward).unit.drafts.length <= MAX_FORWARD_EVENTS)) {
    events += (queue[count] as Forward).unit.drafts.length;
    count++;
  }
  return queue.splice(0, count);
}

export class Forwarder {
  private readonly lanes = new Map<string, Lane>();
  private readonly agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  forwarded = 0;

  constructor(
    private readonly auth: InstanceAuth,
    private readonly log: Logger,
    /** Told when an instance could not be reached or did not answer. */
    private readonly onPeerFailure: (peer: Peer) => void,
  ) {}

  /** Resolves with the events' places, or UNDELIVERED; rejects with the receiving writer's refusal. */
  forward(peer: Peer, unit: KeyedWriteUnit): Promise<TPlacement[] | typeof UNDELIVERED> {
    let lane = this.lanes.get(peer.id);
    if (!lane || lane.peer.url !== peer.url) {
      lane = { peer, queue: [], scheduled: false, inFlight: 0, quiet: [] };
      this.lanes.set(peer.id, lane);
    }
    const target = lane;
    return new Promise((resolve, reject) => {
      target.queue.push({ unit, resolve, reject });
      this.schedule(target);
    });
  }

  async idle(): Promise<void> {
    await Promise.all([...this.lanes.values()].map((lane) => new Promise<void>((resolve) => {
      if (lane.queue.length === 0 && lane.inFlight === 0) resolve();
      else lane.quiet.push(resolve);
    })));
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  /**
   * Sends what one turn of the event loop gathered, at once: waiting for the previous batch's answer
   * would add a whole round of the receiving writer to every forwarded event's latency. The receiver's
   * group commit does the batching that matters; this bounds only the requests open to one instance.
   */
  private schedule(lane: Lane): void {
    if (lane.scheduled || lane.inFlight >= MAX_IN_FLIGHT) return;
    lane.scheduled = true;
    setImmediate(() => {
      lane.scheduled = false;
      if (lane.queue.length === 0) return;
      lane.inFlight++;
      void this.send(lane.peer, takeBatch(lane.queue)).finally(() => {
        lane.inFlight--;
        if (lane.queue.length > 0) this.schedule(lane);
        else if (lane.inFlight === 0) {
          for (const resolve of lane.quiet.splice(0)) resolve();
          if (this.lanes.get(lane.peer.id) === lane) this.lanes.delete(lane.peer.id);
        }
      });
    });
  }

  private async send(peer: Peer, batch: Forward[]): Promise<void> {
    const body = JSON.stringify({ writes: batch.map((f) => unitToWire(f.unit)) });
    const mac = this.auth.mac('forward', peer.id, body);
    let reply: Reply;
    try {
      reply = await this.post(peer, body, mac);
    } catch (error) {
      this.onPeerFailure(peer);
      this.log.error({ peer: peer.url, events: batch.length, error: String(error) }, 'forwarded events got no answer');
      const failure = writeUnconfirmed(error);
      for (const f of batch) f.reject(failure);
      return;
    }
    if (!reply.delivered || reply.status !== 200) {
      this.onPeerFailure(peer);
      this.log.warn({ peer: peer.url, reason: reply.delivered ? `status ${reply.status}` : reply.reason }, 'events not forwarded; writing them here');
      for (const f of batch) f.resolve(UNDELIVERED);
      return;
    }
    // Only the instance that was sent the forward can answer it: anything else is no answer at all.
    const parsed = this.auth.check(reply.mac, 'answer', mac, reply.text) ? ZForwardResponse.safeParse(parseWire(reply.text)) : null;
    if (!parsed?.success || parsed.data.results.length !== batch.length) {
      this.log.error({ peer: peer.url }, 'unreadable answer to forwarded events');
      const failure = writeUnconfirmed(new Error(`unreadable answer from ${peer.url}`));
      for (const f of batch) f.reject(failure);
      return;
    }
    this.forwarded += batch.reduce((sum, f) => sum + f.unit.drafts.length, 0);
    parsed.data.results.forEach((result, i) => {
      const f = batch[i] as Forward;
      if ('error' in result) {
        const { code, message, retry_after: retryAfter } = result.error;
        f.reject(new AppError(code, message, retryAfter === undefined ? {} : { retryAfter }));
      } else if (result.placements.length !== f.unit.drafts.length) {
        f.reject(writeUnconfirmed(new Error(`unreadable answer from ${peer.url}`)));
      } else f.resolve(result.placements);
    });
  }

  /** Resolves with the answer, or `delivered: false` when the request never left; rejects when the outcome is unknown. */
  private post(peer: Peer, body: string, mac: string): Promise<Reply> {
    const url = new URL(FORWARD_PATH, peer.url);
    const secure = url.protocol === 'https:';
    return new Promise((resolve, reject) => {
      const req = (secure ? httpsRequest : httpRequest)(url, {
        method: 'POST',
        agent: secure ? this.agents.https : this.agents.http,
        timeout: TIMEOUT_MS,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), [INSTANCE_MAC_HEADER]: mac },
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code && NOT_SENT.has(error.code)) resolve({ delivered: false, reason: error.code });
        else reject(error);
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        const answerMac = res.headers[INSTANCE_MAC_HEADER];
        res.on('end', () => { resolve({ delivered: true, status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), mac: typeof answerMac === 'string' ? answerMac : undefined }); });
      });
      req.end(body);
    });
  }
}
