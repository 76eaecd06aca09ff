/** Small HTTP helpers over fetch; every test request is a real request to the real server. */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function call<T = any>(
  url: string,
  options: { method?: string; key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  const response = await fetch(url, { method: options.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: jsonOrText(text) as T, text };
}

/**
 * A request through Node's own client, for what fetch will not send or hides: a TRACE (a forbidden method
 * for fetch), an absolute-form request-target (`path` a whole URL), a HEAD's empty body, the reason phrase.
 */
export function rawHttp(
  baseUrl: string,
  options: { method: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; reason: string; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(baseUrl, { method: options.method, path: options.path, headers: options.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, reason: res.statusMessage ?? '', headers: res.headers, body }); });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A response body: parsed JSON when it is JSON, else the text itself (CSV exports, plain errors). */
export function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The spec's CSV columns, in order, as interface.md §4.4 rule 3 writes them (not the code's constant). */
export const SPEC_CSV_COLUMNS = ['id', 'timestamp', 'actor_id', 'actor_name', 'action', 'resource_type', 'resource_id', 'resource_name', 'organization_id'];

/** Creates one event through POST /v1/events and returns it; anything but 201 fails the calling test. */
export async function createEvent(appUrl: string, key: string, overrides: Record<string, unknown> = {}): Promise<any> {
  const res = await call(`${appUrl}/v1/events`, { key, body: eventBody(overrides) });
  if (res.status !== 201) throw new Error(`creating an event answered ${res.status}: ${res.text}`);
  return res.body.event;
}

/** A valid creation body; override any part. */
export function eventBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    actor: { id: 'user_123', name: 'Jane Admin', email: 'jane@example.com' },
    action: 'user.role_changed',
    resource: { type: 'user', id: 'user_456', name: 'John Doe' },
    metadata: { field: 'role', old_value: 'member', new_value: 'admin' },
    ...overrides,
  };
}

export function query(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) search.set(k, String(v));
  const s = search.toString();
  return s ? `?${s}` : '';
}

/** The one polling wait of the suites (test/helpers/waiting.ts), here too because most suites import their helpers from here. */
export { eventually } from './waiting';

/**
 * The events an application sent, without the service's own records (`audit_ledger.*`: keys made,
 * exports run, … in the organization's own log, services/selfAudit.ts).
 */
export function sentEvents<T extends { action: string }>(events: readonly T[]): T[] {
  return events.filter((e) => !e.action.startsWith('audit_ledger.'));
}
