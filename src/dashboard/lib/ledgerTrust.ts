/**
 * What this browser remembers of its organization's log, in localStorage: the verifier key it first
 * saw (pinned) and the newest checkpoint it verified. Every checkpoint the dashboard shows is checked
 * against them: signed by the pinned key, of this organization's log, and, by a consistency proof,
 * extending what was seen before or extended by it. Anything else means the log was rewritten (or the
 * key replaced): the verdict says so, and the remembered checkpoint stays, so it keeps saying so.
 */
import type { Checkpoint } from '../../domain/ledger/formats';
import type { TEvent } from '../../domain/event';
import type { TInclusionProof } from '../../domain/ledger/schemas';
import { importVerifier, openCheckpoint, verifyConsistency, verifyEventInclusion, type WebVerifier } from '../../client/webVerify';

/** localStorage, or a stand-in for it in the tests. */
export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

interface Remembered {
  verifier_key: string;
  note: string;
  verified_at: string;
}

export type TrustVerdict =
  /** Nothing was remembered: this checkpoint is now. */
  | { kind: 'first'; size: number }
  /** The very checkpoint remembered (same size, same root). */
  | { kind: 'same'; size: number }
  /** It extends the one remembered, proven; now it is remembered. */
  | { kind: 'extends'; size: number; from: number }
  /** An older one, which the one remembered extends, proven. */
  | { kind: 'earlier'; size: number; remembered: number }
  /** Not consistent with the remembered checkpoint, or not signed by the pinned key, or another log. */
  | { kind: 'rewritten'; reason: string; verifiedAt: string | null }
  /** The server now presents another verifier key than the one pinned here. */
  | { kind: 'key-changed'; pinned: string; served: string };

export type FetchConsistency = (from: number, to: number) => Promise<readonly string[]>;

export const storageKey = (org: string) => `audit-ledger:ledger:${org}`;

function recall(store: KeyValueStore, org: string): Remembered | null {
  try {
    const value = JSON.parse(store.getItem(storageKey(org)) ?? 'null') as Partial<Remembered> | null;
    return value && typeof value.verifier_key === 'string' && typeof value.note === 'string' ? { verified_at: '', ...value } as Remembered : null;
  } catch {
    return null;
  }
}

function remember(store: KeyValueStore, org: string, verifier: WebVerifier, note: string): void {
  store.setItem(storageKey(org), JSON.stringify({ verifier_key: verifier.text, note, verified_at: new Date().toISOString() } satisfies Remembered));
}

// Verifier keys imported, by their text: an event page checks its proof and then its checkpoint, and
// would otherwise hash and import the same key twice.
const imported = new Map<string, Promise<WebVerifier>>();

/** The pinned verifier (the remembered one, else the one the server presents, which is then pinned). */
export async function pinnedVerifier(store: KeyValueStore, org: string, servedKey: string): Promise<WebVerifier | TrustVerdict> {
  const remembered = recall(store, org);
  if (remembered && remembered.verifier_key !== servedKey.trim()) return { kind: 'key-changed', pinned: remembered.verifier_key, served: servedKey };
  const text = remembered?.verifier_key ?? servedKey;
  let verifier = imported.get(text);
  if (!verifier) imported.set(text, (verifier = importVerifier(text)));
  return verifier;
}

/**
 * Checks the signed checkpoint `note` of organization `org`'s log against what this browser remembers,
 * fetching a consistency proof when the sizes differ, and remembers it when it is the newest verified.
 */
export function checkCheckpoint(store: KeyValueStore, org: string, servedKey: string, note: string, fetchConsistency: FetchConsistency): Promise<TrustVerdict> {
  // One check at a time: two pages checking two new checkpoints at once must not each prove theirs
  // against the same remembered one and then both be remembered, unproven against each other.
  const run = checks.then(() => check(store, org, servedKey, note, fetchConsistency));
  checks = run.catch(() => undefined);
  return run;
}

let checks: Promise<unknown> = Promise.resolve();

async function check(store: KeyValueStore, org: string, servedKey: string, note: string, fetchConsistency: FetchConsistency): Promise<TrustVerdict> {
  const verifier = await pinnedVerifier(store, org, servedKey);
  if (!('key' in verifier)) return verifier;
  const remembered = recall(store, org);
  const rewritten = (reason: string): TrustVerdict => ({ kind: 'rewritten', reason, verifiedAt: remembered?.verified_at ?? null });
  let checkpoint: Checkpoint;
  try {
    checkpoint = await openCheckpoint(note, verifier);
  } catch (error) {
    return rewritten(`the checkpoint is not signed by the pinned key ${verifier.text}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (checkpoint.origin !== `${verifier.name}/${org}`) return rewritten(`the checkpoint is of the log ${checkpoint.origin}, not this organization's`);
  if (!remembered) {
    remember(store, org, verifier, note);
    return { kind: 'first', size: checkpoint.size };
  }
  const before = await openCheckpoint(remembered.note, verifier);
  const [older, newer] = before.size <= checkpoint.size ? [before, checkpoint] : [checkpoint, before];
  const proof = older.size === newer.size ? [] : await fetchConsistency(older.size, newer.size);
  if (!(await verifyConsistency(older, newer, proof))) {
    return rewritten(`the checkpoint of ${checkpoint.size} events and the one of ${before.size} verified here before are not the same log`);
  }
  if (checkpoint.size === before.size) return { kind: 'same', size: checkpoint.size };
  if (newer === before) return { kind: 'earlier', size: checkpoint.size, remembered: before.size };
  remember(store, org, verifier, note);
  return { kind: 'extends', size: checkpoint.size, from: before.size };
}

export interface EventCheck {
  /** What did not check out about the event's inclusion; empty when it is proven. */
  failures: string[];
  trust: TrustVerdict;
}

/** The event detail's check: the event is in the signed checkpoint, and that checkpoint is trusted. */
export async function checkEvent(
  store: KeyValueStore, org: string, servedKey: string, event: TEvent, proof: TInclusionProof, fetchConsistency: FetchConsistency,
): Promise<EventCheck> {
  const verifier = await pinnedVerifier(store, org, servedKey);
  if (!('key' in verifier)) return { failures: ['the verifier key changed'], trust: verifier };
  let failures: string[];
  try {
    failures = (await verifyEventInclusion(event, proof, verifier)).failures;
  } catch (error) {
    failures = [error instanceof Error ? error.message : String(error)];
  }
  return { failures, trust: await checkCheckpoint(store, org, servedKey, proof.checkpoint, fetchConsistency) };
}
