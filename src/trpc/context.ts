/**
 * Context creation. Two ways in, never interchangeable: an API key in `Authorization` (both surfaces,
 * checked here once per request) and, on /trpc only, the dashboard's session cookie (checked by
 * `sessionProcedure` when a procedure needs it). REST calls get no cookie jar, so a session can never
 * reach /v1.
 */
import type { IncomingMessage } from 'node:http';
import type { SessionCookieJar } from '../http/sessionCookie';
import type { AuthPurpose } from '../services/auth';
import type { Services } from '../services/container';
import type { Context } from './init';

/** What a browser request brings besides its body: the session cookie and the client's address. */
export interface WebContext {
  cookies: SessionCookieJar;
  clientAddress: string;
  /** Whether the call came in a batch with others (account procedures refuse that). */
  batched: boolean;
}

/** `type` is what tRPC and trpc-to-openapi report for the call: mutations write, anything else reads. */
export async function createContext(
  services: Services,
  req: IncomingMessage,
  requestId: string,
  type: string,
  web: WebContext | null = null,
): Promise<Context> {
  const purpose: AuthPurpose = type === 'mutation' ? 'write' : 'read';
  return { services, requestId, web, auth: await services.auth.authenticate(req.headers.authorization, purpose) };
}
