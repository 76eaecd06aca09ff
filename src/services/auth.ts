/**
 * API-key authentication, shared by the tRPC context (REST and /trpc) and the streaming export route.
 * It never throws for a bad key: it says what it found, and each surface answers with its own message.
 */
import type { Logger } from 'pino';
import { looksLikeApiKey } from '../domain/apiKey';
import type { ApiKeyRepository } from '../db/apiKeyRepository';
import type { ApiKeyDoc } from '../db/documents';
import type { Clock } from '../domain/time';

export type Principal = { kind: 'apiKey'; tenant: string; keyId: string };

export type AuthResult =
  | { kind: 'missing' }
  | { kind: 'invalid' }
  | { kind: 'ok'; principal: Principal };

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

export class ApiKeyAuthenticator {
  /**
   * Lookups in flight, by key: concurrent requests with the same key share one database query
   * instead of sending one each. Nothing is kept once the query answers, so a revocation is seen by
   * every request that starts after it.
   */
  private readonly inFlight = new Map<string, Promise<ApiKeyDoc | null>>();

  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Reads `Authorization: Bearer <key>`; a header that is absent or not a Bearer token is "missing". */
  async authenticate(header: string | string[] | undefined): Promise<AuthResult> {
    const value = Array.isArray(header) ? undefined : header;
    const token = value ? BEARER.exec(value)?.[1] : undefined;
    if (!token) return { kind: 'missing' };
    if (!looksLikeApiKey(token)) return { kind: 'invalid' };
    const doc = await this.lookup(token);
    if (!doc) return { kind: 'invalid' };
    this.recordUse(doc);
    return { kind: 'ok', principal: { kind: 'apiKey', tenant: doc.org_id, keyId: doc.key_id } };
  }

  private lookup(token: string): Promise<ApiKeyDoc | null> {
    let pending = this.inFlight.get(token);
    if (!pending) {
      pending = this.keys.findActive(token).finally(() => this.inFlight.delete(token));
      this.inFlight.set(token, pending);
    }
    return pending;
  }

  private recordUse(doc: ApiKeyDoc): void {
    // Off the request path: a failed last-used write must not fail the request it describes.
    this.keys.touch(doc, this.clock.now()).catch((err: unknown) => this.log.warn({ err, keyId: doc.key_id }, 'could not record key use'));
  }
}
