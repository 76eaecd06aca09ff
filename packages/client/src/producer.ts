/**
 * Producer signatures on the application's side (docs/trust-model.md, "Producer signatures"): the
 * application signs each event's content with an Ed25519 private key that never leaves it, so that the
 * log can hold no event of its API key that it did not say, whoever holds the service's signing key and
 * database. The key is generated here or by Go's `note.GenerateKey` (the same texts), its verifier key is
 * bound to the API key once, before the key's first event (`client.bindProducerKey`), and a client given
 * the signer signs every event it sends. WebCrypto only: the same code runs in Node 20+ and browsers.
 */
import { ALG_ED25519, fromBase64, hex8, isKeyName, keyIdInput, toBase64, verifierKeyText } from '../../../src/domain/ledger/formats.ts';
import { importProducerKey, producerMessage, signedContentOf } from '../../../src/domain/producerSignature.ts';
import { parseIsoDateTime } from '../../../src/domain/time.ts';
import type { EventInput } from './types.ts';

const ED25519 = { name: 'Ed25519' } as const;
/** PKCS #8 prefix of a raw 32-byte Ed25519 seed (RFC 8410): how WebCrypto imports a seed. */
const PKCS8_PREFIX = Uint8Array.of(0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20);

/** A producer's key pair as texts: keep `privateKey` secret in the application; bind `producerKey`. */
export interface ProducerKeyPair {
  /** Go's private key text: `PRIVATE+KEY+<name>+<hex key id>+<base64(0x01 ‖ seed)>`. */
  privateKey: string;
  /** Its verifier key: `<name>+<hex key id>+<base64(0x01 ‖ public key)>`, what `bindProducerKey` takes. */
  producerKey: string;
}

/** Signs the events of one API key bound to a producer key: give it to `AuditLedgerClient` as `producer`. */
export interface ProducerSigner {
  /** The verifier key of the private key it signs with (what the API key is bound to). */
  readonly producerKey: string;
  /** The API key's organization: the `organization_id` signed for events that give none. */
  readonly organizationId: string;
  /**
   * The event as it is to be sent: its JSON form, its timestamp fixed (now, when it gives none, taken
   * at the call; a given one in the form the service stores) and `producer_signature` added. An event
   * that already carries a signature comes back as it is. Send the result itself on every retry.
   */
  sign(event: EventInput): Promise<EventInput>;
}

/**
 * A WebCrypto key (`CryptoKey`) as far as the signer looks at it: named here so that the declarations
 * need no DOM library (Node's types have no global CryptoKey).
 */
export interface WebCryptoKey {
  readonly algorithm: { readonly name: string };
  readonly type: string;
  readonly usages: readonly string[];
}

export interface ProducerSignerOptions {
  /** The organization of the API key the events are sent with (its id, as the dashboard and `key create` print it). */
  organizationId: string;
  /** The private key's verifier key: needed with a CryptoKey; with a private key text, checked if given. */
  producerKey?: string;
}

/** First 4 bytes, big-endian, of SHA-256(name ‖ "\n" ‖ 0x01 ‖ public key): a C2SP key id. */
async function keyIdOf(name: string, publicKey: Uint8Array): Promise<number> {
  const digest = await crypto.subtle.digest('SHA-256', new Uint8Array(keyIdInput(name, publicKey)));
  return new DataView(digest).getUint32(0);
}

/** The bytes of base64url without padding (a JWK's members). */
function fromBase64Url(text: string): Uint8Array {
  const standard = text.replaceAll('-', '+').replaceAll('_', '/');
  const bytes = fromBase64(standard.padEnd(Math.ceil(standard.length / 4) * 4, '='));
  if (!bytes) throw new TypeError('WebCrypto exported a JWK member that is not base64url');
  return bytes;
}

/** The seed and public key of an extractable Ed25519 private key (its JWK's `d` and `x`: no PKCS #8 layout assumed). */
async function rawPairOf(privateKey: CryptoKey): Promise<{ seed: Uint8Array; publicKey: Uint8Array }> {
  const jwk = await crypto.subtle.exportKey('jwk', privateKey);
  if (jwk.d === undefined || jwk.x === undefined) throw new TypeError('WebCrypto exported an Ed25519 private key without its d and x');
  return { seed: fromBase64Url(jwk.d), publicKey: fromBase64Url(jwk.x) };
}

/** Go's private key text of an Ed25519 seed. */
const privateKeyTextOf = (name: string, id: number, seed: Uint8Array) => `PRIVATE+KEY+${name}+${hex8(id)}+${toBase64(Uint8Array.of(ALG_ED25519, ...seed))}`;

/**
 * A new producer key named `name` (a key name: printable, no space, no `+`; a domain of yours reads
 * best): the private key text, for the application alone, and the producer key to bind.
 */
export async function generateProducerKey(name: string): Promise<ProducerKeyPair> {
  if (!isKeyName(name)) throw new TypeError(`a producer key's name is printable, without spaces or '+': ${JSON.stringify(name)}`);
  const pair = await crypto.subtle.generateKey(ED25519, true, ['sign', 'verify']);
  const { seed, publicKey } = await rawPairOf(pair.privateKey);
  const id = await keyIdOf(name, publicKey);
  return { privateKey: privateKeyTextOf(name, id, seed), producerKey: verifierKeyText(name, id, publicKey) };
}

/** Go's private key text as a signing key and its verifier key, once its key id checks out. */
async function fromPrivateKeyText(text: string): Promise<{ key: CryptoKey; producerKey: string }> {
  // The base64 key may itself hold `+`: it is everything after the fourth.
  const match = /^PRIVATE\+KEY\+([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(text.trim());
  if (!match) throw new TypeError('not a private key of the form PRIVATE+KEY+<name>+<key id>+<key>');
  const [, name, id, encoded] = match as unknown as [string, string, string, string];
  const raw = fromBase64(encoded);
  if (!raw || raw.length !== 33 || raw[0] !== ALG_ED25519) throw new TypeError('not an Ed25519 private key');
  if (!isKeyName(name)) throw new TypeError(`invalid key name: ${JSON.stringify(name)}`);
  const pkcs8 = new Uint8Array([...PKCS8_PREFIX, ...raw.subarray(1)]);
  const { publicKey } = await rawPairOf(await crypto.subtle.importKey('pkcs8', pkcs8, ED25519, true, ['sign']));
  const keyId = await keyIdOf(name, publicKey);
  if (hex8(keyId) !== id) throw new TypeError('the private key does not match its key id');
  // Signed with a key that cannot be exported again.
  return { key: await crypto.subtle.importKey('pkcs8', pkcs8, ED25519, false, ['sign']), producerKey: verifierKeyText(name, keyId, publicKey) };
}

/** What a signature of this text proves nothing about: the check that a key and a producer key are a pair. */
const PAIR_PROBE = new TextEncoder().encode('audit-ledger/producer-key-pair-check/v1\n');

/**
 * A signer for the events of an API key bound to a producer key. `privateKey`: Go's private key text (as
 * `generateProducerKey` makes it) or a WebCrypto Ed25519 private key that can sign (for one kept
 * non-extractable in a key store), with `options.producerKey`. Throws a TypeError when the key is not
 * one, or the producer key is not its own (checked by signing once and verifying).
 */
export async function producerSigner(privateKey: string | WebCryptoKey, options: ProducerSignerOptions): Promise<ProducerSigner> {
  if (typeof options.organizationId !== 'string' || options.organizationId === '') throw new TypeError('producerSigner needs the organizationId of the API key');
  let key: CryptoKey;
  let producerKey: string;
  if (typeof privateKey === 'string') {
    ({ key, producerKey } = await fromPrivateKeyText(privateKey));
  } else {
    if (privateKey.algorithm.name !== 'Ed25519' || privateKey.type !== 'private' || !privateKey.usages.includes('sign')) throw new TypeError('the private key is not an Ed25519 private key usable to sign');
    if (options.producerKey === undefined) throw new TypeError('a CryptoKey needs options.producerKey: its verifier key text');
    // Checked just above to be a private Ed25519 key that signs; WebCrypto refuses anything that is not a CryptoKey.
    key = privateKey as CryptoKey;
    producerKey = options.producerKey.trim();
  }
  const verifier = await importProducerKey(options.producerKey ?? producerKey).catch((error: unknown) => {
    throw new TypeError(`the producer key is not an Ed25519 verifier key whose key id matches: ${error instanceof Error ? error.message : String(error)}`);
  });
  const probe = await crypto.subtle.sign(ED25519, key, PAIR_PROBE);
  if (!(await crypto.subtle.verify(ED25519, verifier, probe, PAIR_PROBE))) throw new TypeError('the producer key is not the private key\'s own');
  return new Ed25519Producer(key, producerKey, options.organizationId);
}

/** The form the service stores a timestamp in (millisecond precision, UTC), or a TypeError as its 400 would say. */
function storedTimestamp(given: string | null | undefined): string {
  if (given === undefined || given === null) return new Date().toISOString();
  const parsed = typeof given === 'string' ? parseIsoDateTime(given) : null;
  if (!parsed) throw new TypeError(`timestamp must be a valid ISO 8601 datetime with a UTC designator or offset, e.g. 2024-01-15T10:30:00.000Z: ${JSON.stringify(given)}`);
  return parsed.toISOString();
}

class Ed25519Producer implements ProducerSigner {
  constructor(
    private readonly key: CryptoKey,
    readonly producerKey: string,
    readonly organizationId: string,
  ) {}

  sign(event: EventInput): Promise<EventInput> {
    if (event.producer_signature != null) return Promise.resolve(event);
    try {
      // Fixed here, at the call, not when the signature comes: a queued event keeps the time it was recorded.
      // The JSON form is what is signed: what JSON drops or converts is not in the body sent either.
      const body = JSON.parse(JSON.stringify({ ...event, timestamp: storedTimestamp(event.timestamp) })) as EventInput;
      const message = new TextEncoder().encode(producerMessage(signedContentOf(body, this.organizationId)));
      return crypto.subtle.sign(ED25519, this.key, message).then((signature) => ({ ...body, producer_signature: toBase64(new Uint8Array(signature)) }));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }
}
