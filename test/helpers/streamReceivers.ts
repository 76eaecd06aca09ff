/**
 * Receivers that streams deliver to in the tests, each on a loopback port: a Standard Webhooks receiver
 * that checks every signature with an independent library (`standardwebhooks`, the specification's
 * reference implementation for JavaScript) and records what it accepted, and stand-ins for Splunk's HTTP
 * Event Collector and Datadog's Logs intake (which cannot run here) that check the documented request
 * shape and refuse anything else.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  headers: Record<string, string>;
  body: string;
}

/** How the receiver answers: acknowledge, refuse with a status (and Retry-After), or hang until the sender gives up. */
export type ReceiverMode = { kind: 'ok' } | { kind: 'status'; status: number; retryAfter?: string } | { kind: 'hang' } | { kind: 'slow'; ms: number };

export class Receiver {
  readonly accepted: Received[] = [];
  readonly refused: Received[] = [];
  mode: ReceiverMode = { kind: 'ok' };
  /** Requests arrived and not answered yet, held by a `hang` or `slow` mode: a sender waiting on this receiver. */
  held = 0;
  /** Whether accepted requests keep their bodies (a large back-fill counts them in `check` instead). */
  keepBodies = true;
  private server: Server | null = null;
  private port = 0;

  constructor(
    private readonly check: (req: Received) => string | null,
    /** Until this says yes (a test has not read the stream's secret yet), requests get 503 and are not recorded. */
    private readonly ready: () => boolean = () => true,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => void this.handle(req, res));
    server.listen(this.port, '127.0.0.1');
    await once(server, 'listening');
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  /** Closes the port (connections refused) until start() again. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => { resolve(); }));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const received: Received = { headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])), body: Buffer.concat(chunks).toString('utf8') };
    if (!this.ready()) {
      res.writeHead(503, { 'retry-after': '0' });
      res.end('not ready');
      return;
    }
    const mode = this.mode;
    if (mode.kind === 'hang' || mode.kind === 'slow') {
      this.held++;
      res.once('close', () => { this.held--; });
    }
    if (mode.kind === 'hang') return;
    // A slow receiver: the delay is the point.
    if (mode.kind === 'slow') await new Promise((resolve) => setTimeout(resolve, mode.ms));
    if (mode.kind === 'status') {
      this.refused.push(received);
      res.writeHead(mode.status, mode.retryAfter ? { 'retry-after': mode.retryAfter } : {});
      res.end('refused by the test');
      return;
    }
    const problem = this.check(received);
    if (problem) {
      this.refused.push(received);
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ problem }));
      return;
    }
    this.accepted.push(this.keepBodies ? received : { headers: received.headers, body: '' });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  }
}

/** A webhook receiver for the secret the stream's creation answered with. */
export function webhookReceiver(secret: () => string): Receiver {
  return new Receiver(({ headers, body }) => {
    try {
      new Webhook(secret()).verify(body, headers);
    } catch (error) {
      return `signature: ${String(error)}`;
    }
    if (headers['content-type'] !== 'application/json') return 'content-type';
    return Array.isArray(JSON.parse(body)) ? null : 'the body is not a JSON array';
  }, () => secret() !== '');
}

/** The events (items) of every accepted webhook batch, in arrival order. */
export function webhookItems(receiver: Receiver): any[] {
  return receiver.accepted.flatMap((r) => JSON.parse(r.body) as unknown[]);
}

/** Splunk HEC, as documented: Authorization "Splunk <token>", concatenated JSON objects, each with `event` and a numeric `time`. */
export function splunkReceiver(token: string): Receiver {
  return new Receiver(({ headers, body }) => {
    if (headers.authorization !== `Splunk ${token}`) return 'authorization';
    const objects = body.split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const o of objects) {
      if (o.event === undefined || typeof o.time !== 'number' || typeof o.sourcetype !== 'string' || typeof o.source !== 'string') return 'an object lacks event, time, source or sourcetype';
    }
    return body.length > 1024 * 1024 ? 'more than 1 MB' : null;
  });
}

/** Datadog Logs v2, as documented: DD-API-KEY, a JSON array of at most 1,000 entries with `message` and `ddsource`, 5 MB at most. */
export function datadogReceiver(apiKey: string): Receiver {
  return new Receiver(({ headers, body }) => {
    if (headers['dd-api-key'] !== apiKey) return 'DD-API-KEY';
    if (body.length > 5 * 1024 * 1024) return 'more than 5 MB';
    const entries = JSON.parse(body) as Record<string, unknown>[];
    if (!Array.isArray(entries) || entries.length > 1000) return 'not an array of at most 1,000 entries';
    for (const e of entries) {
      if (typeof e.message !== 'string' || typeof e.ddsource !== 'string' || e.message.length > 1024 * 1024) return 'an entry lacks message or ddsource, or is over 1 MB';
    }
    return null;
  });
}
