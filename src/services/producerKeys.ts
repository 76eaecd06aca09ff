/**
 * Producer keys (domain/producerSignature.ts): binding an API key to a producer's Ed25519 key, and the
 * check every event of a key passes at the door.
 *
 * A key is bound before its first event or never: whichever comes first, its binding or its first
 * event, settles it for good (db/producerClaimStore.ts). So there is no moment in which an unsigned event
 * of a bound key can be stored, on any instance, and verifiers can demand a signature on every event of
 * a bound key wherever its binding stands in the log. Each settled key is cached for the process's life:
 * a claim never changes.
 */
import { createPublicKey, type KeyObject, verify } from 'node:crypto';
import { AppError, ACCOUNT_MESSAGES } from '../domain/errors';
import type { EventContent } from '../domain/eventFields';
import { toApiEvent } from '../domain/eventFields';
import { NoteError } from '../domain/ledger/formats';
import { bounded } from '../domain/validation';
import { parseVerifierKey } from '../domain/ledger/note';
import { producerMessage, signatureBytes } from '../domain/producerSignature';
import { PRODUCER_BOUND_ACTION, type AuditActor } from '../domain/selfAudit';
import type { Clock } from '../domain/time';
import type { ApiKeyRepository } from '../db/apiKeyRepository';
import type { ProducerClaimStore } from '../db/producerClaimStore';
import type { ProducerClaimDoc } from '../db/documents';

/** SPKI DER prefix of a raw Ed25519 public key (RFC 8410). */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** A bound key's producer key, ready to verify with. */
interface Bound {
  text: string;
  key: KeyObject;
}

export const PRODUCER_MESSAGES = {
  missing: 'Invalid request: this API key is bound to a producer key, so every event must carry producer_signature, the producer\'s Ed25519 signature of its content',
  invalid: 'Invalid request: producer_signature does not verify with the producer key bound to this API key: the content sent is not what was signed (is organization_id, or the key\'s organization when none is given, the one signed?)',
  malformed: 'Invalid request: producer_signature must be the standard base64 of a 64-byte Ed25519 signature',
  noTimestamp: 'Invalid request: an event of a key bound to a producer key gives its timestamp (the signed one): without it the service would choose a time nobody signed',
  unbound: 'Invalid request: this API key is not bound to a producer key, so its events carry no producer_signature',
  conflict: 'This API key has already sent events, or is bound to another producer key: a producer key is bound to an API key once, before its first event. Create a new API key and bind it before using it',
  badKey: 'Invalid request: producer_key must be an Ed25519 verifier key, <name>+<key id>+<base64 key>, whose key id matches',
} as const;

/** A producer key's text, checked (its key id matches), in its one spelling; throws a 400 for anything else. */
export function checkedProducerKey(text: string): { text: string; key: KeyObject } {
  try {
    const verifier = parseVerifierKey(text);
    return { text: verifier.text, key: createPublicKey({ key: Buffer.concat([SPKI_PREFIX, verifier.publicKey]), format: 'der', type: 'spki' }) };
  } catch (error) {
    if (error instanceof NoteError) throw new AppError('VALIDATION_FAILED', PRODUCER_MESSAGES.badKey, { fields: ['producer_key'] });
    throw error;
  }
}

export class ProducerKeys {
  /**
   * Settled keys, by key id: the producer key, or null (unsigned events). While a key settles, its pending
   * settlement, shared; replaced by what it found once it is found, so that checking a settled key (most
   * events' keys) need not wait a turn.
   */
  private readonly settled = new Map<string, Bound | null | Promise<Bound | null>>();

  constructor(
    private readonly claims: ProducerClaimStore,
    private readonly keys: ApiKeyRepository,
    private readonly clock: Clock,
  ) {}

  /**
   * Refuses events that do not carry what their key owes: a valid signature from a bound key, none from
   * any other. `field(i)`: the request path of the i-th event (`events[i]`, or '' for a single one).
   * A settled key is checked at once (it throws, or returns nothing); another once it is settled (a promise).
   */
  check(tenant: string, keyId: string, contents: readonly EventContent[], field: (i: number) => string): Promise<void> | undefined {
    const settled = this.settled.get(keyId);
    if (settled !== undefined && !(settled instanceof Promise)) {
      this.refuseUnowed(contents, settled, field);
      return undefined;
    }
    // Signed events never settle a key as unsigned: a producer that signs before its key is bound is
    // refused, and its key can still be bound.
    const signs = contents.some((content) => content.producer_signature !== undefined);
    return this.claimOf(tenant, keyId, !signs).then((bound) => this.refuseUnowed(contents, bound, field));
  }

  /** Throws for the events that do not carry what `bound` asks of them: every one named (as validation names fields), under the first one's message. */
  private refuseUnowed(contents: readonly EventContent[], bound: Bound | null, field: (i: number) => string): void {
    const refused: { field: string; message: string }[] = [];
    contents.forEach((content, i) => {
      const problem = this.problemOf(content, bound);
      if (problem) refused.push({ field: `${field(i)}producer_signature`, message: problem });
    });
    const [first] = refused;
    if (first) throw new AppError('EVENT_SIGNATURE_INVALID', first.message, bounded(refused.map((r) => r.field)));
  }

  /** What an event lacks for its key: null when it carries what it owes. */
  private problemOf(content: EventContent, bound: Bound | null): string | null {
    const given = content.producer_signature;
    if (!bound) return given === undefined ? null : PRODUCER_MESSAGES.unbound;
    if (given === undefined) return PRODUCER_MESSAGES.missing;
    const signature = signatureBytes(given);
    if (!signature) return PRODUCER_MESSAGES.malformed;
    if (content.ts === null) return PRODUCER_MESSAGES.noTimestamp;
    const message = Buffer.from(producerMessage(apiFormOf(content)), 'utf8');
    return verify(null, message, bound.key, signature) ? null : PRODUCER_MESSAGES.invalid;
  }

  /**
   * Binds `keyId` (of `tenant`) to a producer key, if it has sent no event and has no other producer key
   * yet; the same binding again answers the same. `record` writes the service's binding entry into the
   * organization's log, once: when the log has none for the key yet (a binding whose entry a crash lost
   * gets it then). The log is asked first, so that a claim row deleted from the database cannot have the
   * service record a second binding of the key to another producer key.
   */
  async bind(tenant: string, keyId: string, producerKey: string, record: (keyName: string, producerKey: string) => Promise<unknown>): Promise<{ api_key_id: string; producer_key: string }> {
    const { text, key } = checkedProducerKey(producerKey);
    const doc = await this.keys.forOrg(tenant).get(keyId);
    if (!doc || doc.revoked_at !== null) throw new AppError('API_KEY_NOT_FOUND', ACCOUNT_MESSAGES.apiKeyNotFound);
    const logged = await this.claims.loggedBindings(tenant, keyId);
    if (logged.some((other) => other !== text)) throw new AppError('PRODUCER_KEY_CONFLICT', PRODUCER_MESSAGES.conflict);
    const existing = await this.claims.find(tenant, keyId);
    if (existing === null) throw new AppError('API_KEY_NOT_FOUND', ACCOUNT_MESSAGES.apiKeyNotFound);
    if (existing === undefined && logged.length === 0 && (await this.claims.hasSent(tenant, keyId))) {
      // Used before claims were kept: settled as unsigned now, as its first event would have settled it.
      await this.claims.settle({ _id: keyId, org_id: tenant, producer_key: null, at: this.clock.now() });
      throw new AppError('PRODUCER_KEY_CONFLICT', PRODUCER_MESSAGES.conflict);
    }
    const claim = await this.claims.settle({ _id: keyId, org_id: tenant, producer_key: text, at: this.clock.now() });
    if (!claim) throw new AppError('API_KEY_NOT_FOUND', ACCOUNT_MESSAGES.apiKeyNotFound);
    if (claim.producer_key !== text) throw new AppError('PRODUCER_KEY_CONFLICT', PRODUCER_MESSAGES.conflict);
    this.settled.set(keyId, { text, key });
    if (logged.length === 0) await record(doc.name, text);
    return { api_key_id: keyId, producer_key: text };
  }

  /** The organization's keys that are settled: key id → producer key, or null (its events are unsigned, it cannot be bound). */
  async settledIn(tenant: string): Promise<Map<string, string | null>> {
    return new Map((await this.claims.claimsIn(tenant)).map((claim) => [claim._id, claim.producer_key]));
  }

  /**
   * The key's producer key, or null. `settleUnsigned`: a key with no claim yet is settled as unsigned
   * (its first unsigned event); otherwise it is left open (a signed event before the binding is refused
   * and changes nothing), and nothing is cached that an unsigned event could take for settled. A key
   * without a claim whose log holds a binding entry (its claim row deleted behind the service's back) is
   * settled bound, as the log says: the log is the word on bindings.
   */
  private async claimOf(tenant: string, keyId: string, settleUnsigned: boolean): Promise<Bound | null> {
    const cached = this.settled.get(keyId);
    if (cached !== undefined) return cached;
    if (!settleUnsigned) {
      const found = await this.claims.find(tenant, keyId);
      if (found === undefined && (await this.claims.loggedBindings(tenant, keyId)).length === 0) return null;
    }
    return this.settle(tenant, keyId);
  }

  /** Settles the key (the claim found, the log's binding, or unsigned), once per process: a pending settlement is shared, a failed one forgotten. */
  private async settle(tenant: string, keyId: string): Promise<Bound | null> {
    const known = this.settled.get(keyId);
    if (known !== undefined) return known;
    const settling = (async () => {
      const found = await this.claims.find(tenant, keyId);
      if (found !== undefined) return boundOf(found);
      const [logged] = await this.claims.loggedBindings(tenant, keyId);
      return boundOf(await this.claims.settle({ _id: keyId, org_id: tenant, producer_key: logged ?? null, at: this.clock.now() }));
    })();
    this.settled.set(keyId, settling);
    settling.then(
      (bound) => {
        // Unless a binding made here meanwhile put its key in its place.
        if (this.settled.get(keyId) === settling) this.settled.set(keyId, bound);
      },
      () => this.settled.delete(keyId),
    );
    return settling;
  }
}

/** A claim's producer key, ready to verify with; a claim under another organization (planted) binds nothing here and is refused. */
function boundOf(claim: ProducerClaimDoc | null): Bound | null {
  if (!claim) throw new AppError('INVALID_API_KEY', 'Invalid API key');
  return claim.producer_key === null ? null : checkedProducerKey(claim.producer_key);
}

/** The signed fields of a content, as its API form will show them (what a producer signs and a verifier reads). */
function apiFormOf(content: EventContent): Record<string, unknown> {
  return toApiEvent(content as unknown as Parameters<typeof toApiEvent>[0]);
}

/** The binding's entry in the organization's log. */
export function bindingEntry(actor: AuditActor, keyId: string, keyName: string, producerKey: string) {
  return { actor, action: PRODUCER_BOUND_ACTION, resource: { type: 'api_key', id: keyId, name: keyName }, metadata: { producer_key: producerKey } } as const;
}
