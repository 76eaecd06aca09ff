/**
 * API key format and hashing. A key is `alk_` followed by 43 base64url characters (256 random bits).
 * Only its SHA-256 is stored: the key is high-entropy, so a slow password hash would add latency to
 * every request without adding safety. The prefix makes leaked keys easy to recognize by scanners.
 */
import { hash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'alk_';

/**
 * What an API key may do: `events:write` (create events, single or batch), `events:read` (get, list,
 * export; and manage the organization's log streams, which export its events), `ledger:read`
 * (checkpoints, proofs, tiles), `retention:manage` (the retention policy, legal holds and erasure under
 * /v1/retention: only an owner can grant it, domain/roles.ts `canGrant`).
 */
export const SCOPES = ['events:write', 'events:read', 'ledger:read', 'retention:manage'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * What a key gets when none are chosen, and what a key made before scopes existed has: the first three.
 * Never `retention:manage`: a power to remove events is granted by an owner's explicit choice only.
 */
export const DEFAULT_SCOPES = ['events:write', 'events:read', 'ledger:read'] as const satisfies readonly Scope[];

/** A key's scopes: those it was made with, or the default three for a key made before scopes existed. */
export function scopesOf(doc: { scopes?: readonly Scope[] | undefined }): readonly Scope[] {
  return doc.scopes ?? DEFAULT_SCOPES;
}
const KEY_PATTERN = /^alk_[A-Za-z0-9_-]{43}$/;

export interface GeneratedApiKey {
  /** The secret, shown once. */
  key: string;
  hash: string;
  /** What a person sees to recognize the key later: its start and its last four characters. */
  prefix: string;
  last4: string;
}

export function generateApiKey(): GeneratedApiKey {
  const key = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, hash: hash('sha256', key, 'hex'), prefix: key.slice(0, 8), last4: key.slice(-4) };
}

/**
 * The hashes of keys met lately, by key: a request's key is hashed by the rate limit and again by
 * authentication, and a key sends request after request. Bounded (emptied when full), so keys made up by
 * strangers only cost what hashing them costs. Only what has a key's shape is kept, as a copy of its own:
 * a token is cut out of its header, and V8's cut string keeps the whole header (up to 16 KB) alive.
 */
const recentHashes = new Map<string, string>();
const RECENT_HASHES_MAX = 1_000;

export function hashApiKey(key: string): string {
  const known = recentHashes.get(key);
  if (known !== undefined) return known;
  const hashed = hash('sha256', key, 'hex');
  if (looksLikeApiKey(key)) {
    if (recentHashes.size >= RECENT_HASHES_MAX) recentHashes.clear();
    // A key's characters are ASCII: its latin1 bytes are its characters, read back as a new string.
    recentHashes.set(Buffer.from(key, 'latin1').toString('latin1'), hashed);
  }
  return hashed;
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** The token of an `Authorization: Bearer <token>` header; undefined when there is none. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined;
}

/** Cheap shape check so malformed tokens never reach the database. */
export function looksLikeApiKey(token: string): boolean {
  return KEY_PATTERN.test(token);
}

/** Public identifiers: short, random, prefixed by what they name. */
export function newPublicId(prefix: 'org' | 'key' | 'acct' | 'mem' | 'inv'): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}
