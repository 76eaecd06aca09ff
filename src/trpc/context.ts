/**
 * Context creation. Two ways in, never interchangeable: an API key in `Authorization` (both surfaces,
 * checked here once per request) and, on /trpc only, the dashboard's session cookie (checked by
 * `sessionProcedure` when a procedure needs it). REST calls get no cookie jar, so a session can never
 * reach /v1.
 */
import type { IncomingMessage } from 'node:http';
import type { AuthPurpose, AuthResult } from '../services/auth';
import type { ApiServices, HttpServices } from '../services/container';
import { bearerToken } from '../domain/apiKey';

/** The session cookie as a procedure sees it; the HTTP layer implements it (`http/sessionCookie.ts`). */
export interface SessionCookieJar {
  /** The session token the request carries, if any. */
  token: string | undefined;
  set(token: string, expiresAt: Date): void;
  clear(): void;
}

/** What a browser request brings besides its body: the session cookie and the client's address. */
export interface WebContext {
  cookies: SessionCookieJar;
  clientAddress: string;
  /** Whether the call came in a batch with others (account procedures refuse that). */
  batched: boolean;
}

/** What every procedure is called with. */
export interface Context {
  services: ApiServices;
  /** What the `Authorization` header gave: the API-key way in (for a mutation, possibly the write shortcut's answer). */
  auth: AuthResult;
  /** The key looked up now, whatever the shortcut holds: for mutations the writer does not check again. */
  authenticateNow: () => Promise<AuthResult>;
  /** The bearer token of `Authorization`, whatever it is: the viewer's way in (a viewer token). */
  bearer: string | undefined;
  /** The cookie jar and client address of a /trpc request; null on /v1. */
  web: WebContext | null;
  requestId: string;
  /** The raw `Idempotency-Key` header, if any (validated by the procedures that take one). */
  idempotencyKeyHeader: string | undefined;
  /**
   * What a procedure tells the HTTP layer about its answer: `replayed`, set by a write answered with
   * events stored before it, adds `Idempotent-Replayed: true`. An object, so that it survives the
   * context copies that middlewares make.
   */
  answer: { replayed: boolean };
}

/**
 * `Context.authenticateNow`. Made here rather than written in the context's literal, where the compiler
 * (tsx keeps functions' names) would name the new function with a call per request.
 */
function lookupNow(services: Pick<HttpServices, 'auth'>, header: string | undefined): () => Promise<AuthResult> {
  return () => services.auth.authenticate(header, 'read');
}

/** `type` is what tRPC and trpc-to-openapi report for the call: mutations write, anything else reads. */
export async function createContext(
  services: Pick<HttpServices, 'api' | 'auth'>,
  req: IncomingMessage,
  requestId: string,
  type: string,
  web: WebContext | null = null,
): Promise<Context> {
  const purpose: AuthPurpose = type === 'mutation' ? 'write' : 'read';
  const idempotencyKeyHeader = req.headers['idempotency-key'];
  return {
    services: services.api,
    requestId,
    web,
    auth: await services.auth.authenticate(req.headers.authorization, purpose),
    authenticateNow: lookupNow(services, req.headers.authorization),
    bearer: bearerToken(req.headers.authorization),
    idempotencyKeyHeader: Array.isArray(idempotencyKeyHeader) ? idempotencyKeyHeader.join(', ') : idempotencyKeyHeader,
    answer: { replayed: false },
  };
}
