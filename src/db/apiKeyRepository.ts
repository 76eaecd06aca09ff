/** API keys: only the SHA-256 of a key is stored; the key itself exists once, in the creation answer. */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_SCOPES, generateApiKey, newPublicId, type Scope, SCOPES, scopesOf } from '../domain/apiKey';
import { mapLimited } from '../domain/limited';

/** Point reads of one call in flight at once (src/domain/limited.ts). */
const POINT_READS_IN_FLIGHT = 16;
import type { ApiKeyDoc } from './documents';
import type { Collections } from './database';
import { isDuplicateKey } from './errors';

export interface ApiKeyView {
  id: string;
  name: string;
  organization_id: string;
  prefix: string;
  last4: string;
  scopes: Scope[];
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  status: 'active' | 'revoked';
}

/** Last-used time is written at most this often per key and process, so reads do not turn into writes. */
export const LAST_USED_GRANULARITY_MS = 5 * 60_000;

/** The API form of a key record: never the key, nor its hash. */
export function apiKeyView(doc: ApiKeyDoc): ApiKeyView {
  return {
    id: doc.key_id,
    name: doc.name,
    organization_id: doc.org_id,
    prefix: doc.prefix,
    last4: doc.last4,
    scopes: [...scopesOf(doc)],
    created_at: doc.created_at.toISOString(),
    last_used_at: doc.last_used_at?.toISOString() ?? null,
    revoked_at: doc.revoked_at?.toISOString() ?? null,
    status: doc.revoked_at ? 'revoked' : 'active',
  };
}

/** One organization's keys: the organization is fixed at construction and part of every query. */
export class OrgApiKeys {
  constructor(
    private readonly c: Collections,
    readonly orgId: string,
  ) {}

  async create(name: string, now: Date, scopes: readonly Scope[] = DEFAULT_SCOPES): Promise<{ doc: ApiKeyDoc; key: string }> {
    const generated = generateApiKey();
    const doc: ApiKeyDoc = {
      _id: generated.hash,
      key_id: newPublicId('key'),
      org_id: this.orgId,
      name,
      prefix: generated.prefix,
      last4: generated.last4,
      scopes: SCOPES.filter((scope) => scopes.includes(scope)),
      created_at: now,
      revoked_at: null,
      last_used_at: null,
    };
    await this.c.apiKeys.insertOne(doc);
    return { doc, key: generated.key };
  }

  /** One of the organization's keys by its public id, or null. */
  async get(keyId: string): Promise<ApiKeyDoc | null> {
    return this.c.apiKeys.findOne({ key_id: keyId, org_id: this.orgId });
  }

  /** Oldest first (the CLI's listing) or newest first (the dashboard's). */
  async list(order: 'oldest' | 'newest'): Promise<ApiKeyDoc[]> {
    const direction = order === 'oldest' ? 1 : -1;
    return withLastUse(this.c, await this.c.apiKeys.find({ org_id: this.orgId }).sort({ created_at: direction, key_id: direction }).toArray());
  }

  /** Revokes one of the organization's keys; null when it has no key with this id. Revoking twice keeps the first time. */
  async revoke(keyId: string, now: Date): Promise<ApiKeyDoc | null> {
    await this.c.apiKeys.updateOne({ key_id: keyId, org_id: this.orgId, revoked_at: null }, { $set: { revoked_at: now } });
    await markRevocation(this.c);
    const [doc] = await withLastUse(this.c, await this.c.apiKeys.find({ key_id: keyId, org_id: this.orgId }).toArray());
    return doc ?? null;
  }
}

/**
 * How long a writer trusts a revocation mark it read (ms, from before the read was sent, by the
 * monotonic clock and by the wall clock both: a host suspended, or a virtual machine paused, may stop
 * one of them): `ActiveKeys` reads it at most this often instead of before every round. The guarantee
 * also needs a read sent after the mark's write was acknowledged to see it (a primary, as the service
 * reads by default; not a secondary chosen in MONGODB_URI's readPreference).
 */
export const REVOCATION_MARK_LEASE_MS = 250;
/**
 * How long a revocation waits, after its mark is written, before it answers: longer than the lease, so
 * that every mark read trusted when it answers was sent after the mark changed. (Margin for timers that
 * fire early and for clocks of two processes running at slightly different rates.)
 */
export const REVOCATION_SETTLE_MS = REVOCATION_MARK_LEASE_MS + 50;

/**
 * Changes the revocation mark, after the key's document says it is revoked, then waits out the writers'
 * lease on the old one (REVOCATION_SETTLE_MS): once it returns, every round that begins, on any instance,
 * checks its keys against a mark read after the change, so it re-checks them and refuses the revoked one.
 */
async function markRevocation(c: Collections): Promise<void> {
  try {
    await c.revocations.updateOne({ _id: 'keys' }, { $set: { mark: randomUUID() } }, { upsert: true, writeConcern: { w: 'majority', j: true } });
  } catch (error) {
    // Two first revocations at once (FerretDB's upsert is not atomic): the other one set the mark.
    if (!isDuplicateKey(error)) throw error;
  }
  // Measured, not trusted to one timer: Node's timers can fire a little early.
  for (const until = performance.now() + REVOCATION_SETTLE_MS; performance.now() < until; ) await sleep(until - performance.now());
}

/** The two clocks a lease is timed by (ms). */
export interface LeaseClocks {
  monotonic: () => number;
  wall: () => number;
}
type LeaseTimes = { monotonic: number; wall: number };
const REAL_CLOCKS: LeaseClocks = { monotonic: () => performance.now(), wall: () => Date.now() };

/** Whether a mark asked for at `asked` is still trusted at `now`: by both clocks, less than the lease has passed (and time has not gone back). */
function leaseHolds(asked: LeaseTimes | null, now: LeaseTimes): boolean {
  if (!asked) return false;
  const monotonic = now.monotonic - asked.monotonic;
  const wall = now.wall - asked.wall;
  return monotonic >= 0 && monotonic < REVOCATION_MARK_LEASE_MS && wall >= 0 && wall < REVOCATION_MARK_LEASE_MS;
}

/**
 * The writer's check that the keys of a round are still active, right before it stores their events
 * (authentication may have used a key found active seconds ago). A key found active stays trusted until
 * the revocation mark changes: then every key is looked up again. The mark is read at most every
 * REVOCATION_MARK_LEASE_MS, and a revocation answers only after that long (`markRevocation`), so a round
 * that begins after a revocation answered refuses the key, on every instance. A round costs a point read
 * per key not seen before, and a busy writer reads the mark four times a second instead of once a round:
 * each read is a database command, whose write system call (waking the database) was ~8% of this
 * process's CPU under single events (issue 39). Looking every key up each round cost half the ingest of
 * sixteen busy organizations on FerretDB; an `$in` reads every key of the installation there.
 */
export class ActiveKeys {
  private known = new Map<string, { org_id: string }>();
  private mark: string | null | undefined;
  /** When the mark in hand was asked for, by each clock (before the read was sent); null: ask again. */
  private markAsked: LeaseTimes | null = null;

  constructor(
    private readonly keys: Pick<ApiKeyRepository, 'revocationMark' | 'activeAmong'>,
    /** Real time only (tests of the lease give their own): never the service's injected Clock, which tests hold still. */
    private readonly clocks: LeaseClocks = REAL_CLOCKS,
  ) {}

  /** The active keys among `hashes`, with their organizations. */
  async among(hashes: readonly string[]): Promise<Map<string, { org_id: string }>> {
    const asked = { monotonic: this.clocks.monotonic(), wall: this.clocks.wall() };
    if (this.mark === undefined || !leaseHolds(this.markAsked, asked)) {
      const read = await this.keys.revocationMark();
      this.markAsked = asked;
      if (read !== this.mark) {
        this.known = new Map();
        this.mark = read;
      }
    }
    const mark = this.mark;
    const unknown = hashes.filter((hash) => !this.known.has(hash));
    if (unknown.length > 0) {
      const found = await this.keys.activeAmong(unknown);
      // Trusted only if no revocation happened while they were read (nor meanwhile in another call's read).
      if ((await this.keys.revocationMark()) === mark && this.mark === mark) for (const [hash, key] of found) this.known.set(hash, key);
      else this.mark = undefined;
      const result = new Map<string, { org_id: string }>();
      for (const hash of hashes) {
        const key = this.known.get(hash) ?? found.get(hash);
        if (key) result.set(hash, key);
      }
      return result;
    }
    return new Map(hashes.flatMap((hash) => { const key = this.known.get(hash); return key ? [[hash, key] as const] : []; }));
  }

  /** Forgets every key (tests; a key known revoked). */
  clear(): void {
    this.known = new Map();
  }
}

/** The keys with their last use filled in from `api_key_uses` (the later time, where an old database has one on the key too). */
async function withLastUse(c: Collections, docs: ApiKeyDoc[]): Promise<ApiKeyDoc[]> {
  if (docs.length === 0) return docs;
  const uses = new Map((await c.apiKeyUses.find({ _id: { $in: docs.map((doc) => doc._id) } }).toArray()).map((use) => [use._id, use.last_used_at]));
  return docs.map((doc) => {
    const used = uses.get(doc._id);
    return used && !(doc.last_used_at && doc.last_used_at > used) ? { ...doc, last_used_at: used } : doc;
  });
}

/**
 * Keys across organizations, only where the organization is not known yet: authentication finds a key
 * by its hash (the key is the credential that names the organization), the writer re-checks a batch's
 * keys, and the operator's CLI revokes by a key's public id.
 */
export class ApiKeyRepository {
  constructor(private readonly c: Collections) {}

  /** The keys of one organization. */
  forOrg(orgId: string): OrgApiKeys {
    return new OrgApiKeys(this.c, orgId);
  }

  /** The active key with this hash, or null for an unknown or revoked one. */
  async findActiveByHash(hash: string): Promise<ApiKeyDoc | null> {
    return this.c.apiKeys.findOne({ _id: hash, revoked_at: null });
  }

  /** Whether the key with this public id is active and of this organization (a viewer token's minting key). */
  async isActive(keyId: string, orgId: string): Promise<boolean> {
    return (await this.c.apiKeys.findOne({ key_id: keyId, revoked_at: null }, { projection: { org_id: 1 } }))?.org_id === orgId;
  }

  /** Which of these key hashes belong to active keys, with each one's organization: point reads, never an `$in`. */
  async activeAmong(hashes: readonly string[]): Promise<Map<string, { org_id: string }>> {
    const docs = await mapLimited(hashes, POINT_READS_IN_FLIGHT, (hash) => this.c.apiKeys.findOne({ _id: hash, revoked_at: null }, { projection: { _id: 1, org_id: 1 } }));
    return new Map(docs.filter((doc) => doc !== null).map((doc) => [doc._id, { org_id: doc.org_id }]));
  }

  /** The revocation mark now (RevocationMarkDoc), or null when no key was ever revoked. */
  async revocationMark(): Promise<string | null> {
    return (await this.c.revocations.findOne({ _id: 'keys' }))?.mark ?? null;
  }

  /** The operator's revocation by public id; null when no key has it. Revoking twice keeps the first time. */
  async revoke(keyId: string, now: Date): Promise<ApiKeyDoc | null> {
    await this.c.apiKeys.updateOne({ key_id: keyId, revoked_at: null }, { $set: { revoked_at: now } });
    await markRevocation(this.c);
    const [doc] = await withLastUse(this.c, await this.c.apiKeys.find({ key_id: keyId }).toArray());
    return doc ?? null;
  }

  /**
   * Records a use of the key with this hash, in `api_key_uses`, never in the key's document (see
   * ApiKeyUseDoc). `$max`: uses recorded out of order keep the latest.
   */
  async touch(hash: string, now: Date): Promise<void> {
    try {
      await this.c.apiKeyUses.updateOne({ _id: hash }, { $max: { last_used_at: now } }, { upsert: true });
    } catch (error) {
      // Two first uses at once (FerretDB's upsert is not atomic): the other one was recorded.
      if (!isDuplicateKey(error)) throw error;
    }
  }
}
