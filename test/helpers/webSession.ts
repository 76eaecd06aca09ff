/**
 * A browser stand-in for API tests of the dashboard's procedures: keeps the session cookie like a
 * browser would, sends the page's Origin on POSTs, and calls /trpc both typed (the router's own
 * client) and raw (to see statuses and headers).
 */
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import type { AppRouter } from '../../src/trpc/router';
import { jsonOrText } from './api';

export interface RawResponse {
  status: number;
  headers: Headers;
  body: any;
}

export class WebSession {
  cookie: string | undefined;
  /** Set-Cookie headers seen, newest last. */
  readonly setCookies: string[] = [];

  /** The router's client, with this session's cookie. Errors are TRPCClientError with `data.httpStatus`. */
  readonly client;

  constructor(
    readonly appUrl: string,
    private readonly extraHeaders: Record<string, string> = {},
  ) {
    this.client = createTRPCClient<AppRouter>({
      links: [httpLink({ url: `${appUrl}/trpc`, fetch: (url, init) => this.fetch(url instanceof Request ? url.url : url.toString(), (init ?? {}) as RequestInit) })],
    });
  }

  /** A raw /trpc call: GET for queries, POST for mutations. */
  async raw(path: string, input?: unknown, options: { method?: 'GET' | 'POST'; headers?: Record<string, string> } = {}): Promise<RawResponse> {
    const method = options.method ?? 'POST';
    const url =
      method === 'GET'
        ? `${this.appUrl}/trpc/${path}${input === undefined ? '' : `?input=${encodeURIComponent(JSON.stringify(input))}`}`
        : `${this.appUrl}/trpc/${path}`;
    const init: RequestInit = { method, headers: { ...options.headers } };
    if (method === 'POST') {
      init.body = input === undefined ? '' : JSON.stringify(input);
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
    }
    const response = await this.fetch(url, init);
    return { status: response.status, headers: response.headers, body: jsonOrText(await response.text()) };
  }

  async fetch(url: string, init: RequestInit): Promise<Response> {
    const headers = new Headers(init.headers);
    for (const [name, value] of Object.entries(this.extraHeaders)) if (!headers.has(name)) headers.set(name, value);
    if (this.cookie && !headers.has('cookie')) headers.set('cookie', this.cookie);
    if ((init.method ?? 'GET') === 'POST' && !headers.has('origin')) headers.set('origin', this.appUrl);
    const response = await fetch(url, { ...init, headers });
    for (const line of response.headers.getSetCookie()) {
      this.setCookies.push(line);
      const [pair = ''] = line.split(';');
      const [name, value = ''] = pair.split('=');
      if (name === 'al_session' || name === '__Host-al_session') this.cookie = value ? `${name}=${value}` : undefined;
    }
    return response;
  }

  async signup(email: string, password = 'correct horse battery staple', organization_name = 'Acme Inc') {
    return this.client.account.signup.mutate({ email, password, organization_name });
  }

  async login(email: string, password = 'correct horse battery staple') {
    return this.client.account.login.mutate({ email, password });
  }
}

/** The HTTP status and app code of a failed typed call, for `expect(...).toEqual(...)`. */
export async function failure(promise: Promise<unknown>): Promise<{ status: number | undefined; code: string | undefined; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TRPCClientError) {
      const data = error.data as { httpStatus?: number; appCode?: string } | undefined;
      return { status: data?.httpStatus, code: data?.appCode, message: error.message };
    }
    throw error;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

let counter = 0;
/** An email no other test uses. */
export function uniqueEmail(label = 'user'): string {
  counter += 1;
  return `${label}.${process.pid}.${counter}.${Date.now()}@example.com`;
}
