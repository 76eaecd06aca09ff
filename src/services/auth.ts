/**
 * API-key authentication, shared by the tRPC context (REST and /trpc) and the streaming export route.
 * It never throws for a bad key: it says what it found, and each surface answers with its own message.
 *
 * Reads look the key up on every request (concurrent requests with one key share the query).
 * Writes may use a key that was found active in the last minute (the answer says so: `fresh: false`),
 * and only event writes accept that (trpc/init.ts, `keyCheckedAtCommit`): the group-commit writer checks
 * every key of a round again right before storing it (db/apiKeyRepository.ts, `ActiveKeys`), so a key
 * revoked before the round began stores no event, yet a busy ingest path does not pay one lookup per
 * request. Every other mutation looks the key up.
 */
import type { Logger } from 'pino';
import { bearerToken, hashApiKey, looksLikeApiKey, type Scope, scopesOf } from '../domain/apiKey';
import { LAST_USED_GRANULARITY_MS, type ApiKeyRepository } from '../db/apiKeyRepository';
import type { ApiKeyDoc } from '../db/documents';
import type { Clock } from '../domain/time';
import type { Role } from '../domain/roles';

/** A caller that holds an API key: the only kind that can write events. */
export type ApiKeyPrincipal = { kind: 'apiKey'; tenant: string; keyId: string; keyHash: string; scopes: readonly Scope[] };
/** A person signed in to the dashboard (services/accounts.ts), acting in one organization with their role there. */
export type SessionPrincipal = { kind: 'session'; tenant: string; accountId: string; email: string; role: Role; sessionHash: string };
/**
 * One of an organization's customers with a viewer token (services/viewer.ts): reads only the tenant's
 * events whose organization_id field is `eventOrganizationId` (and, when `actions` is set, whose action
 * is among them). That field is a value the client sends, not an organization of this service, which
 * is `tenant` here as everywhere else.
 */
export type ViewerPrincipal = { kind: 'viewer'; tenant: string; eventOrganizationId: string; actions: readonly string[] | null; expiresAt: Date };
/** Whoever reads: the tenant, and for a viewer the part of it they may see (services/events.ts). */
export type Principal = ApiKeyPrincipal | SessionPrincipal | ViewerPrincipal;

/** What the caller is about to do: reads need a fresh lookup, writes are checked again at commit. */
export type AuthPurpose = 'read' | 'write';

/**
 * How long a key found active authenticates event writes without a lookup: the writer checks it again
 * at commit, so this only spares lookups (with 1,000 organizations' keys sharing the load, a 10 s window
 * cost one per four events).
 */
const WRITE_CACHE_MS = 60_000;
const CACHE_MAX = 10_000;

export type AuthResult =
  | { kind: 'missing' }
  | { kind: 'invalid' }
  /** `fresh`: looked up now; false when a write was let through on a key found active lately (WRITE_CACHE_MS). */
  | { kind: 'ok'; principal: ApiKeyPrincipal; fresh: boolean };

export class ApiKeyAuthenticator {
  /**
   * Lookups in flight, by key: concurrent requests with the same key share one database query
   * instead of sending one each. Nothing is kept once the query answers, so a revocation is seen by
   * every request that starts after it.
   */
  private readonly inFlight = new Map<string, Promise<ApiKeyDoc | null>>();
  /** Keys found active recently, by hash, for writes only (see the module comment). */
  private readonly recentForWrites = new Map<string, { doc: ApiKeyDoc; at: number }>();
  /** When this process last recorded each key's use (ms), by hash: at most once per LAST_USED_GRANULARITY_MS. */
  private readonly usesRecorded = new Map<string, number>();

  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Reads `Authorization: Bearer <key>`; a header that is absent or not a Bearer token is "missing". */
  async authenticate(header: string | string[] | undefined, purpose: AuthPurpose = 'read'): Promise<AuthResult> {
    const token = bearerToken(header);
    if (!token) return { kind: 'missing' };
    if (!looksLikeApiKey(token)) return { kind: 'invalid' };
    const hash = hashApiKey(token);
    const now = this.clock.now();
    const recent = purpose === 'write' ? this.recentForWrites.get(hash) : undefined;
    const doc = recent && now.getTime() - recent.at < WRITE_CACHE_MS ? recent.doc : await this.lookup(hash);
    if (!doc) {
      this.forget(hash);
      return { kind: 'invalid' };
    }
    if (purpose === 'write' && doc !== recent?.doc) this.remember(doc, now);
    this.recordUse(doc, now);
    return { kind: 'ok', principal: { kind: 'apiKey', tenant: doc.org_id, keyId: doc.key_id, keyHash: doc._id, scopes: scopesOf(doc) }, fresh: doc !== recent?.doc };
  }

  /** Drops a key from the write shortcut; the writer calls it when it finds a key revoked. */
  forget(hash: string): void {
    this.recentForWrites.delete(hash);
  }

  private remember(doc: ApiKeyDoc, now: Date): void {
    if (this.recentForWrites.size >= CACHE_MAX) this.recentForWrites.clear();
    this.recentForWrites.set(doc._id, { doc, at: now.getTime() });
  }

  private lookup(hash: string): Promise<ApiKeyDoc | null> {
    let pending = this.inFlight.get(hash);
    if (!pending) {
      pending = this.keys.findActiveByHash(hash).finally(() => this.inFlight.delete(hash));
      this.inFlight.set(hash, pending);
    }
    return pending;
  }

  private recordUse(doc: ApiKeyDoc, now: Date): void {
    const recorded = this.usesRecorded.get(doc._id);
    if (recorded !== undefined && now.getTime() - recorded < LAST_USED_GRANULARITY_MS) return;
    // Noted first, so concurrent requests do not all write it.
    if (this.usesRecorded.size >= CACHE_MAX) this.usesRecorded.clear();
    this.usesRecorded.set(doc._id, now.getTime());
    // Off the request path: a failed last-used write must not fail the request it describes.
    this.keys.touch(doc._id, now).catch((err: unknown) => { this.log.warn({ err, keyId: doc.key_id }, 'could not record key use'); });
  }
}
