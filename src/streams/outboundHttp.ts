/**
 * Requests to destinations that organizations chose: bounded connections, a deadline, a short excerpt
 * of any answer, and, unless the installation allows it, no request to a loopback, private or
 * link-local address (checked on the address actually connected to, so a name that resolves to one is
 * refused too): a stream must not become a way into the installation's own network.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP } from 'node:net';

const PRIVATE = new BlockList();
for (const [net, prefix] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) PRIVATE.addSubnet(net, prefix, 'ipv6');

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return PRIVATE.check(mapped[1], 'ipv4');
  return PRIVATE.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

/** An attempt that did not get a 2xx: what it says goes into the stream's last error. */
export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';
  constructor(
    message: string,
    /** The destination's HTTP status, when it answered. */
    readonly status: number | null = null,
    /** What its Retry-After asked for, in ms. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }
}

export interface OutboundResponse {
  status: number;
  /** The first few KB of the answer. */
  excerpt: string;
}

/** Retry-After in ms: delay-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | null {
  if (!header) return null;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

const EXCERPT_BYTES = 2048;

export interface OutboundOptions {
  /** Let destinations be loopback or private addresses, and plain http (tests, a private network). */
  allowPrivate: boolean;
  timeoutMs: number;
  /** Connections per instance, all destinations together. */
  maxSockets: number;
}

export class OutboundHttp {
  readonly httpAgent: http.Agent;
  readonly httpsAgent: https.Agent;

  constructor(readonly options: OutboundOptions) {
    const lookup = this.guardedLookup.bind(this);
    const common = { keepAlive: true, maxTotalSockets: options.maxSockets, maxSockets: 4, lookup, timeout: options.timeoutMs };
    this.httpAgent = new http.Agent(common);
    this.httpsAgent = new https.Agent(common);
  }

  /** Refuses a URL that may never be a destination here; the API calls it before storing one. */
  problemWith(url: string): string | null {
    const parsed = new URL(url);
    if (this.options.allowPrivate) return null;
    if (parsed.protocol !== 'https:') return 'must be an https URL';
    const host = parsed.hostname.replace(/^\[|\]$/g, '');
    if (host === 'localhost' || host.endsWith('.localhost') || isPrivateAddress(host)) return 'must not be a loopback, private or link-local address';
    return null;
  }

  private guardedLookup(hostname: string, options: LookupOptions, callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void): void {
    dnsLookup(hostname, { ...options, all: true }, (error, list) => {
      if (error) {
        callback(error, []);
        return;
      }
      if (!this.options.allowPrivate && list.some((a) => isPrivateAddress(a.address))) {
        const refused: NodeJS.ErrnoException = new Error(`${hostname} resolves to a loopback, private or link-local address: refused`);
        refused.code = 'EPRIVATE';
        callback(refused, []);
      } else if (options.all) {
        callback(null, list);
      } else if (list[0]) {
        callback(null, list[0].address, list[0].family);
      } else {
        callback(Object.assign(new Error(`${hostname}: no address`), { code: 'ENOTFOUND' }), []);
      }
    });
  }

  /** Sends one request; resolves with any answer, rejects with a DeliveryError when none came. */
  request(method: string, url: string, headers: Record<string, string>, body: Buffer): Promise<OutboundResponse> {
    const problem = this.problemWith(url);
    if (problem) return Promise.reject(new DeliveryError(`the destination URL ${problem}`));
    const parsed = new URL(url);
    const transport = parsed.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = transport.request(parsed, {
        method,
        headers: { ...headers, 'content-length': String(body.length), 'user-agent': 'audit-ledger-streams/1' },
        agent: parsed.protocol === 'https:' ? this.httpsAgent : this.httpAgent,
        timeout: this.options.timeoutMs,
      });
      const deadline = setTimeout(() => { req.destroy(new DeliveryError(`no answer within ${this.options.timeoutMs} ms`)); }, this.options.timeoutMs);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (chunk: Buffer) => {
          if (kept < EXCERPT_BYTES) chunks.push(chunk.subarray(0, EXCERPT_BYTES - kept));
          kept += chunk.length;
        });
        res.on('end', () => {
          clearTimeout(deadline);
          const status = res.statusCode ?? 0;
          const excerpt = Buffer.concat(chunks).toString('utf8');
          if (status >= 200 && status < 300) {
            resolve({ status, excerpt });
            return;
          }
          const header: unknown = res.headers['retry-after'];
          reject(new DeliveryError(`HTTP ${status}${excerpt ? `: ${excerpt.slice(0, 200)}` : ''}`, status, retryAfterMs(typeof header === 'string' ? header : undefined)));
        });
        res.on('error', (error) => { clearTimeout(deadline); reject(toDeliveryError(error)); });
      });
      req.on('timeout', () => { req.destroy(new DeliveryError(`no answer within ${this.options.timeoutMs} ms`)); });
      req.on('error', (error) => { clearTimeout(deadline); reject(toDeliveryError(error)); });
      req.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/** A network failure as the stream's last error says it: DNS, TLS, refused, reset, timed out. */
export function toDeliveryError(error: unknown): DeliveryError {
  if (error instanceof DeliveryError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new DeliveryError(`DNS: ${message}`);
  if (code && /^(CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|ERR_TLS|ERR_SSL|EPROTO)/.test(code)) return new DeliveryError(`TLS: ${message}`);
  return new DeliveryError(code ? `${code}: ${message}` : message);
}
