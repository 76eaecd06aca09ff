/**
 * Producer signatures (docs/trust-model.md, "Producer signatures"). An API key can be bound, before its first
 * event, to a producer's Ed25519 key (a C2SP verifier key, `<name>+<hex id>+<base64(0x01 ‖ key)>`).
 * Every event of a bound key then carries `producer_signature`: the producer's signature of the bytes
 * `producerMessage` makes of the event's content. The service refuses an event of a bound key without a
 * valid one; verifiers check them again, learning the bindings from the organization's own log (the
 * service's `audit_ledger.key.producer_bound` entries), so that whoever holds the service's signing key
 * and its database still cannot put words in a bound producer's mouth.
 *
 * Browser-safe: the message is text; `ProducerSignatureCheck` verifies with WebCrypto.
 */
import { CLIENT_FIELDS, type EventField } from './eventFields';
import { canonicalJson, fromBase64, keyIdInput, NoteError, parseVerifierKeyText } from './ledger/formats';
import { PRODUCER_BOUND_ACTION, SELF_AUDIT_ACTIONS, SELF_AUDIT_KEY_ID } from './selfAudit';

export { PRODUCER_BOUND_ACTION };

/** What the signed bytes start with: a signature over anything else can never pass for one of these. */
export const PRODUCER_EVENT_CONTEXT = 'audit-ledger/producer-event/v1\n';


/** The fields a producer signs, by API name: every field a client gives but the signature itself. */
export const SIGNED_FIELDS: readonly string[] = (CLIENT_FIELDS as readonly EventField[]).filter((field) => !field.omitWhenNull).map((field) => field.api);

/**
 * The text a producer signs for an event in its API form, as stored: the context line, then the RFC
 * 8785 canonical JSON of its signed fields (absent ones as null, metadata `{}` when none). A client signs
 * it before sending (timestamp as `toISOString()` writes it, organization_id its key's organization when
 * it gives none); any verifier computes it again from the event as read or exported.
 */
export function producerMessage(event: Readonly<Record<string, unknown>>): string {
  const content: Record<string, unknown> = {};
  for (const api of SIGNED_FIELDS) content[api] = event[api] ?? (api === 'metadata' ? {} : null);
  return PRODUCER_EVENT_CONTEXT + canonicalJson(content);
}

/**
 * A create body's signed fields as the service will store and show them: what a producer signs before
 * sending. The body must give its timestamp (the service would otherwise choose one nobody signed);
 * `organizationId` is the sending key's organization, which the event names when the body gives none.
 */
export function signedContentOf(body: Readonly<Record<string, unknown>>, organizationId: string): Record<string, unknown> {
  const content: Record<string, unknown> = {};
  for (const field of CLIENT_FIELDS as readonly EventField[]) {
    if (field.omitWhenNull) continue;
    let value: unknown = body;
    for (const step of field.input ?? []) value = (value as Record<string, unknown> | null | undefined)?.[step];
    if (field.kind === 'time') {
      if (typeof value !== 'string' && !(value instanceof Date)) throw new TypeError('a signed event gives its timestamp');
      value = new Date(value).toISOString();
    } else if (value === undefined || value === null) value = field.kind === 'json' ? {} : field.defaultsToOwner ? organizationId : null;
    content[field.api] = value;
  }
  return content;
}

/** The 64 bytes of a signature in its one base64 spelling, or null. */
export function signatureBytes(text: unknown): Uint8Array | null {
  const bytes = typeof text === 'string' ? fromBase64(text) : null;
  return bytes?.length === 64 ? bytes : null;
}

/** What a verifier needs of an event: its API form's signed fields, and who stored it. */
export type CheckedEvent = Readonly<Record<string, unknown>> & { id: string; action: string; api_key_id: string; producer_signature?: string };

/** The key a binding entry binds and the producer key it names, or null for any other event. */
export function bindingOf(event: CheckedEvent): { keyId: string; producerKey: string } | null {
  if (event.api_key_id !== SELF_AUDIT_KEY_ID || event.action !== PRODUCER_BOUND_ACTION) return null;
  const producerKey = (event.metadata as Record<string, unknown> | undefined)?.producer_key;
  return typeof event.resource_id === 'string' && typeof producerKey === 'string' ? { keyId: event.resource_id, producerKey } : null;
}

/**
 * Whether an event is the producer's words: not one the service recorded itself, under its own key id
 * or, for what a key did (an export, a stream), under that key's id with one of its exact actions. Any
 * other action of its namespace is no client's (clients are refused it) and no record of the service's:
 * under a bound key it is checked like the rest, and fails.
 */
const isProducers = (event: CheckedEvent) => event.api_key_id !== SELF_AUDIT_KEY_ID && !Object.hasOwn(SELF_AUDIT_ACTIONS, event.action);

const MAX_NAMED = 5;

/**
 * The producer-signature rules over an organization's events, given in any order (a binding is written
 * just after the key is claimed, so a signed event may precede it in the log):
 * - a key is bound by the log's binding entries; two naming different producer keys fail;
 * - every event of a bound key (but the service's own records) carries a valid signature by its key;
 * - a signature on an event of a key the log never binds fails: nothing unverifiable passes as signed.
 * `pinned`: bindings the verifier knows from elsewhere (its own key, a pinned flag); the log must agree.
 * Memory: signed events met before their key's binding are held until it comes (an export is newest
 * first, so most of them: references to events the caller holds anyway); of unsigned ones, only a count
 * and the first ids.
 */
export class ProducerSignatureCheck {
  private readonly bindings = new Map<string, { text: string; key: Promise<CryptoKey | null> }>();
  /** Signed events whose key's binding has not come yet. */
  private readonly waiting = new Map<string, CheckedEvent[]>();
  /** Unsigned events whose key is not bound so far: they fail if a binding comes. */
  private readonly unsigned = new Map<string, { count: number; ids: string[] }>();
  private readonly failures: string[] = [];
  /** Events whose signature was verified. */
  signed = 0;

  constructor(pinned: ReadonlyMap<string, string> = new Map()) {
    for (const [keyId, text] of pinned) this.bind(keyId, text, 'pinned');
  }

  /** Takes one event (its API form); a removed event's leaf has nothing to check. */
  async add(event: CheckedEvent): Promise<void> {
    const binding = bindingOf(event);
    if (binding) {
      this.bind(binding.keyId, binding.producerKey, `binding entry ${event.id}`);
      for (const held of this.waiting.get(binding.keyId) ?? []) await this.check(held);
      this.waiting.delete(binding.keyId);
      const unsigned = this.unsigned.get(binding.keyId);
      if (unsigned) this.fail(`${unsigned.count} event(s) of API key ${binding.keyId}, bound to producer key ${binding.producerKey.trim()}, carry no producer signature`, unsigned.ids, unsigned.count);
      this.unsigned.delete(binding.keyId);
      return;
    }
    if (!isProducers(event)) return;
    if (this.bindings.has(event.api_key_id)) return this.check(event);
    if (event.producer_signature !== undefined) {
      const held = this.waiting.get(event.api_key_id) ?? [];
      held.push(event);
      this.waiting.set(event.api_key_id, held);
    } else {
      const held = this.unsigned.get(event.api_key_id) ?? { count: 0, ids: [] };
      held.count++;
      if (held.ids.length < MAX_NAMED) held.ids.push(event.id);
      this.unsigned.set(event.api_key_id, held);
    }
  }

  /**
   * What was found, once all events are in. `complete`: the events given are the whole log, so a signed
   * event whose key no binding entry binds fails; otherwise (a filtered export, a page) a key's binding
   * may be among the events left out, and the events of keys bound nowhere in view (signed or not) are
   * counted as unchecked.
   */
  finish(complete: boolean): { failures: string[]; unchecked: number; bound: number } {
    // Over part of a log, a key bound outside it is not known: its events, signed or not, are unchecked.
    let unchecked = 0;
    for (const [keyId, held] of this.waiting) {
      if (complete) this.fail(`${held.length} event(s) of API key ${keyId} carry a producer signature, but the log binds no producer key to it`, held.map((event) => event.id), held.length);
      else unchecked += held.length;
    }
    if (!complete) for (const held of this.unsigned.values()) unchecked += held.count;
    this.waiting.clear();
    this.unsigned.clear();
    return { failures: [...this.failures], unchecked, bound: this.bindings.size };
  }

  private bind(keyId: string, text: string, where: string): void {
    const known = this.bindings.get(keyId);
    if (known) {
      if (known.text !== text.trim()) this.failures.push(`API key ${keyId} is bound to two producer keys: ${known.text} and ${text.trim()} (${where})`);
      return;
    }
    this.bindings.set(keyId, { text: text.trim(), key: importProducerKey(text).catch(() => null) });
  }

  private async check(event: CheckedEvent): Promise<void> {
    const binding = this.bindings.get(event.api_key_id);
    if (!binding) return;
    const key = await binding.key;
    if (!key) {
      this.fail(`event ${event.id}: the producer key bound to API key ${event.api_key_id} is not a valid Ed25519 verifier key: ${binding.text}`);
      return;
    }
    const problem = await signatureProblem(event, key);
    if (problem === null) this.signed++;
    else if (problem === 'invalid') this.fail(`event ${event.id}: its producer signature does not verify with producer key ${binding.text} (its content is not what the producer signed)`);
    else this.fail(`event ${event.id} of API key ${event.api_key_id}, bound to producer key ${binding.text}, ${problem === 'missing' ? 'carries no producer signature' : 'carries a malformed producer signature'}`);
  }

  private fail(message: string, ids: readonly string[] = [], count = ids.length): void {
    this.failures.push(ids.length ? `${message}: ${ids.slice(0, MAX_NAMED).join(', ')}${count > MAX_NAMED ? ', …' : ''}` : message);
  }
}

/**
 * What is wrong with an event's producer signature under `key` (an `importProducerKey` key): none given,
 * not 64 bytes of standard base64, or not a signature of `producerMessage(event)`; null when it verifies.
 */
export async function signatureProblem(event: Readonly<Record<string, unknown>>, key: CryptoKey): Promise<'missing' | 'malformed' | 'invalid' | null> {
  if (event.producer_signature === undefined) return 'missing';
  const signature = signatureBytes(event.producer_signature);
  if (!signature) return 'malformed';
  const verified = await crypto.subtle.verify({ name: 'Ed25519' }, key, new Uint8Array(signature), new TextEncoder().encode(producerMessage(event)));
  return verified ? null : 'invalid';
}

/** A producer key's text as a WebCrypto Ed25519 key, once its key id checks out. */
export async function importProducerKey(text: string): Promise<CryptoKey> {
  const parts = parseVerifierKeyText(text);
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new Uint8Array(keyIdInput(parts.name, parts.publicKey))));
  if (new DataView(digest.buffer).getUint32(0) !== parts.id) throw new NoteError('the producer key does not match its key id');
  return crypto.subtle.importKey('raw', new Uint8Array(parts.publicKey), { name: 'Ed25519' }, false, ['verify']);
}
