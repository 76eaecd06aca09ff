/**
 * Exactly-once writes for requests that carry an Idempotency-Key (docs/api.md, decision 17).
 *
 * The first request with a key claims it with a unique insert into `idempotency_keys`, the one atomic
 * step that both MongoDB and FerretDB offer without transactions, and the claim fixes, once and for all,
 * the request's hash and the ids, time of receipt and key id of its events. Every request with that key
 * and the same request then writes exactly those events: the unique index on the events' `_id` stores
 * each of them once, whichever request, process or retry gets there first, and the writer answers an id
 * stored already with the stored event (src/ingest/eventWriter.ts). So:
 * - a retry after a success finds every event stored and answers them, storing nothing; an event removed
 *   under retention since is found as its tombstone (db/documents.ts) and answered as removed, never
 *   stored again;
 * - a retry after a crash, between the write and the answer or midway through a batch, stores exactly
 *   the missing events (a batch once begun is completed, whatever the cap says by then);
 * - two requests with one key at once, in one process or two, write the same ids: one event each.
 * A request that the writer refused for its cap or its key stored nothing: its claim is given back, so
 * a retry is judged afresh. Claims end after IDEMPOTENCY_TTL_HOURS.
 */
import { createHash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import type { Logger } from 'pino';
import { AppError, MESSAGES } from '../domain/errors';
import type { Clock } from '../domain/time';
import type { Stores } from '../db/stores';
import type { IdempotencyClaimDoc, StoredEvent } from '../db/documents';
import { claimIdOf, type IdempotencyRepository } from '../db/idempotencyRepository';
import { describeDbError } from '../db/errors';
import type { EventDraft } from '../ingest/writeUnit';
import { clientValues, type EventContent } from '../domain/eventFields';
import { newSalt } from '../domain/ledger/eventHash';
import type { Ingest } from '../ingest/ingest';
import type { ApiKeyPrincipal } from './auth';

/** What a create body says about its event (the field table's client fields); the service adds the id, time of receipt and key. */
export type { EventContent };

/** The request kinds a key can be used for; a key used for one is never taken for another. */
export type WriteKind = 'event' | 'batch';

/**
 * What a write answers: the stored events in request order (the tombstone of one removed since a first
 * request stored it), and whether all of them were stored before this request.
 */
export interface Written {
  docs: StoredEvent[];
  replayed: boolean;
}

/** What the service adds to a request's events: their ids, time of receipt, key id and Idempotency-Key. */
interface Stamp {
  ids: string[];
  receivedAt: Date;
  apiKeyId: string;
  idempotencyKey?: string;
}

/** IDEMPOTENCY_TTL_HOURS's default. */

/** Refusals that stored nothing and are not this request's to remember: the cap, a key revoked meanwhile. */
const FORGOTTEN_REFUSALS = new Set(['MONTHLY_LIMIT_REACHED', 'INVALID_API_KEY']);
/** Expired claims are cleared at most this often, by whichever request comes along. */
const SWEEP_EVERY_MS = 60_000;
/** A claim can vanish between failing to take it and reading it (given back, expired): then try again, a few times. */
const MAX_CLAIM_ATTEMPTS = 3;

export function draftsOf(tenant: string, contents: EventContent[], stamp: Stamp): EventDraft[] {
  // Object.assign, not `{ ...content, _id, … }`: V8 builds a spread followed by more keys ten times slower
  // (about 10 µs an event here). The keys, their order and values are the same.
  return contents.map((content, i) => Object.assign({}, content, {
    _id: stamp.ids[i] as string,
    tenant,
    ts: content.ts ?? stamp.receivedAt,
    received_at: stamp.receivedAt,
    api_key_id: stamp.apiKeyId,
    salt: newSalt(),
    ...(stamp.idempotencyKey === undefined ? {} : { idempotency_key: stamp.idempotencyKey }),
  }));
}

export function freshStamp(count: number, receivedAt: Date, apiKeyId: string): Stamp {
  return { ids: Array.from({ length: count }, () => uuidv7()), receivedAt, apiKeyId };
}

/**
 * The request as validated, hashed: every field as it would be stored, in a fixed order, so neither
 * the body's layout, nor its key order, nor `null` against an absent field, nor a timestamp's offset
 * changes it. Metadata counts as its JSON text: it is stored exactly, key order included.
 */
export function requestHash(kind: WriteKind, contents: EventContent[]): string {
  const fields = contents.map(clientValues);
  return createHash('sha256').update(JSON.stringify([kind, fields])).digest('hex');
}

/** Requests with a key, by what became of them (metrics). */
export interface IdempotencyStats {
  /** First uses of a key. */
  claimed: number;
  /** Answered entirely from events stored before: nothing written. */
  replayed: number;
  /** Retries that wrote events still missing (after a crash, an unconfirmed write, or at once with the first). */
  completed: number;
  /** Refused: the key was used for another request. */
  reused: number;
}

export class IdempotentWrites {
  private readonly claims: IdempotencyRepository;
  private lastSweep = 0;
  readonly stats: IdempotencyStats = { claimed: 0, replayed: 0, completed: 0, reused: 0 };

  constructor(
    private readonly stores: Stores,
    private readonly ingest: Ingest,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly ttlMs: number,
  ) {
    this.claims = stores.claims;
  }

  async write(principal: ApiKeyPrincipal, key: string, kind: WriteKind, contents: EventContent[]): Promise<Written> {
    const id = claimIdOf(principal.tenant, key);
    const hash = requestHash(kind, contents);
    // At its cap: no claim is written. A retry of a request stored before is still answered (a read).
    const capped = this.ingest.refusedAtDoor(principal.tenant);
    if (capped) {
      const found = await this.claims.find(id);
      if (!found || found.expires_at <= this.clock.now() || found.request_hash !== hash || found.event_ids.length !== contents.length) throw capped;
      return this.complete(principal, key, found, contents);
    }
    for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt++) {
      const now = this.clock.now();
      this.sweep(now);
      const stamp = { ...freshStamp(contents.length, now, principal.keyId), idempotencyKey: key };
      const claim: IdempotencyClaimDoc = {
        _id: id,
        tenant: principal.tenant,
        request_hash: hash,
        event_ids: stamp.ids,
        received_at: now,
        api_key_id: principal.keyId,
        expires_at: new Date(now.getTime() + this.ttlMs),
      };
      if (await this.claims.claim(claim)) {
        this.stats.claimed++;
        try {
          return { docs: await this.ingest.write({ drafts: draftsOf(principal.tenant, contents, stamp), keyHash: principal.keyHash, capExempt: false }), replayed: false };
        } catch (error) {
          if (error instanceof AppError && FORGOTTEN_REFUSALS.has(error.code)) {
            // Kept if it cannot be given back: its retry is then judged afresh all the same (it writes
            // the claimed ids), only another request with the key would get 422.
            await this.claims.release(claim).catch((releaseError: unknown) => {
              this.log.warn({ error: describeDbError(releaseError) }, 'could not give an idempotency key back');
            });
          }
          throw error;
        }
      }
      const found = await this.claims.find(id);
      if (!found) continue;
      if (found.expires_at <= now) {
        await this.claims.release(found);
        continue;
      }
      if (found.request_hash !== hash || found.event_ids.length !== contents.length) {
        this.stats.reused++;
        throw new AppError('IDEMPOTENCY_KEY_REUSED', MESSAGES.idempotencyKeyReused, { fields: ['Idempotency-Key'] });
      }
      return this.complete(principal, key, found, contents);
    }
    throw new AppError('SERVICE_UNAVAILABLE', 'This Idempotency-Key is being claimed and released by other requests; retry', { retryAfter: 1 });
  }

  /** A key claimed before for this very request: answers its stored events, storing first any that are missing. */
  private async complete(principal: ApiKeyPrincipal, key: string, claim: IdempotencyClaimDoc, contents: EventContent[]): Promise<Written> {
    const drafts = draftsOf(principal.tenant, contents, { ids: claim.event_ids, receivedAt: claim.received_at, apiKeyId: claim.api_key_id, idempotencyKey: key });
    const stored = await this.stores.events(principal.tenant).getMany(claim.event_ids);
    const missing = drafts.filter((draft) => !stored.has(draft._id));
    if (missing.length > 0 && claim.legacy_removed) throw new AppError('IDEMPOTENCY_KEY_UNVERIFIABLE', MESSAGES.idempotencyKeyUnverifiable, { fields: ['Idempotency-Key'] });
    if (missing.length === 0) this.stats.replayed++;
    else {
      this.stats.completed++;
      // Some stored already: the cap counted the request when it began; its claim backs the exemption.
      const written = await this.ingest.write({ drafts: missing, keyHash: principal.keyHash, capExempt: stored.size > 0 });
      for (const doc of written) stored.set(doc._id, doc);
    }
    return { docs: claim.event_ids.map((eventId) => stored.get(eventId) as StoredEvent), replayed: missing.length === 0 };
  }

  private sweep(now: Date): void {
    if (now.getTime() - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now.getTime();
    this.claims.deleteExpired(now).catch((error: unknown) => {
      this.log.warn({ error: describeDbError(error) }, 'could not clear expired idempotency keys');
    });
  }
}
