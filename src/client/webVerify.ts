/**
 * The ledger's checks with WebCrypto (SHA-256, Ed25519) for the dashboard: that an event, as the
 * browser shows it, is a leaf of a checkpoint signed by the pinned key, and that a checkpoint extends
 * an older one. The formats and proof steps are the server's own (`formats.ts`, `proofWalk.ts`); only
 * the hashing differs, so the tests hold this module to the same answers in Node, which has WebCrypto too.
 */
import type { TEvent } from '../domain/event';
import { hashInputOfEvent } from '../domain/eventFields';
import { type Checkpoint, canonicalEventText, commitmentInput, fromBase64, keyIdInput, type LeafCommit, leafJson, NoteError, parseCheckpoint, parseVerifierKeyText, saltBytes, signaturesBy } from '../domain/ledger/formats';
import { rootFromInclusion, rootsFromConsistency } from '../domain/ledger/proofWalk';
import type { TInclusionProof, TInstallationInclusion } from '../domain/ledger/schemas';
import { bindingOf, ProducerSignatureCheck } from '../domain/producerSignature';
import { checkpointBody, cosignatureTime, cosignedMessage, cosignerKeyIdInput, parseCosignerKeyText, splitNote } from '../domain/ledger/witnessFormats';

type Hash = Uint8Array<ArrayBuffer>;

const utf8 = (text: string) => new TextEncoder().encode(text);

async function sha256(...parts: Uint8Array[]): Promise<Hash> {
  const input = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    input.set(part, at);
    at += part.length;
  }
  return new Uint8Array(await crypto.subtle.digest('SHA-256', input));
}

const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** RFC 6962 interior node, chained on promises so the proof walk stays the synchronous one. */
type Node = (left: Promise<Hash>, right: Promise<Hash>) => Promise<Hash>;
const node: Node = async (left, right) => sha256(Uint8Array.of(1), await left, await right);

/**
 * An interior-node function that hashes each pair of children once: the paths of many leaves of one
 * tree share their upper nodes, and WebCrypto's digest costs far more per call than a Map lookup.
 */
export function sharedNodes(): Node {
  const seen = new Map<string, Hash>();
  return async (left, right) => {
    const [l, r] = [await left, await right];
    const key = hex(l) + hex(r);
    let hash = seen.get(key);
    if (!hash) seen.set(key, (hash = await sha256(Uint8Array.of(1), l, r)));
    return hash;
  };
}

export interface WebVerifier {
  name: string;
  id: number;
  text: string;
  key: CryptoKey;
}

/** A verifier key string, once its key id checks out, as a WebCrypto Ed25519 key. */
export async function importVerifier(text: string): Promise<WebVerifier> {
  const parts = parseVerifierKeyText(text);
  const id = new DataView((await sha256(keyIdInput(parts.name, parts.publicKey))).buffer).getUint32(0);
  if (id !== parts.id) throw new NoteError('the verifier key does not match its key id');
  const key = await crypto.subtle.importKey('raw', new Uint8Array(parts.publicKey), { name: 'Ed25519' }, false, ['verify']);
  return { name: parts.name, id, text: text.trim(), key };
}

/** The checkpoint in a signed note, once every signature by the verifier's key checks out. */
export async function openCheckpoint(note: string, verifier: WebVerifier): Promise<Checkpoint> {
  const { text, signatures } = signaturesBy(note, verifier);
  for (const signature of signatures) {
    if (!(await crypto.subtle.verify({ name: 'Ed25519' }, verifier.key, new Uint8Array(signature), utf8(text)))) {
      throw new NoteError(`the signature by ${verifier.name} does not verify`);
    }
  }
  return parseCheckpoint(text);
}

export interface InclusionCheck {
  checkpoint: Checkpoint;
  /** What did not check out, in words; empty when the event is proven. */
  failures: string[];
}

/**
 * Whether `event` (as GET returns it) is leaf `proof.leaf_index` of the checkpoint in the proof, signed
 * by `verifier`: its hash and leaf recomputed here, the path walked to the signed root.
 */
export async function verifyEventInclusion(event: TEvent, proof: TInclusionProof, verifier: WebVerifier): Promise<InclusionCheck> {
  const checkpoint = await openCheckpoint(proof.checkpoint, verifier);
  return { checkpoint, failures: await inclusionFailures(event, proof, checkpoint, verifier.name) };
}

/**
 * What does not check out of `event` being leaf `proof.leaf_index` of `checkpoint`, a checkpoint of the
 * ledger `ledgerName` already opened (one opening serves every event proven under it).
 */
export async function inclusionFailures(event: TEvent, proof: Omit<TInclusionProof, 'checkpoint' | 'leaf'>, checkpoint: Checkpoint, ledgerName: string, combine: Node = node): Promise<string[]> {
  const failures: string[] = [];
  const prefix = `${ledgerName}/`;
  if (!checkpoint.origin.startsWith(prefix)) failures.push(`the checkpoint is of the log ${checkpoint.origin}, not one of ${ledgerName}`);
  if (checkpoint.size !== proof.tree_size) failures.push(`the signed checkpoint has ${checkpoint.size} events, not ${proof.tree_size}`);
  const text = canonicalEventText(hashInputOfEvent(event));
  const eventHash = hex(await sha256(utf8(text)));
  if (eventHash !== proof.event_sha256) failures.push('the event differs from the one the server hashed');
  // A v2 leaf commits to the salted commitment, computed here from the event and the proof's salt.
  let commit: LeafCommit = { v: 1, hash: eventHash };
  if (proof.salt !== undefined) {
    const salt = saltBytes(proof.salt);
    if (!salt) failures.push('the proof\'s salt is not 32 bytes of hex');
    commit = { v: 2, hash: hex(await sha256(commitmentInput(salt ?? new Uint8Array(), text))) };
    if (commit.hash !== proof.event_commitment) failures.push('the event differs from the one the server committed to');
  }
  const leaf = sha256(Uint8Array.of(0), utf8(leafJson(checkpoint.origin.slice(prefix.length), proof.leaf_index + 1, commit)));
  const path = proof.inclusion_path.map((p) => fromBase64(p));
  const root = path.every((p) => p?.length === 32)
    ? rootFromInclusion(proof.leaf_index, checkpoint.size, leaf, path.map((p) => Promise.resolve(new Uint8Array(p as Uint8Array))), combine)
    : null;
  if (!root || !sameBytes(await root, checkpoint.root)) failures.push(`the event is not sequence number ${proof.leaf_index + 1} of the signed tree of ${checkpoint.size}`);
  return failures;
}

/** Whether `proof` shows that the tree of `older` is a prefix of the tree of `newer` (same log). */
export async function verifyConsistency(older: Checkpoint, newer: Checkpoint, proof: readonly string[]): Promise<boolean> {
  if (older.origin !== newer.origin || older.size > newer.size) return false;
  if (older.size === newer.size) return proof.length === 0 && sameBytes(older.root, newer.root);
  if (older.size === 0) return proof.length === 0;
  const hashes = proof.map((p) => fromBase64(p));
  if (hashes.some((h) => h?.length !== 32)) return false;
  const roots = rootsFromConsistency(older.size, newer.size, hashes.map((h) => Promise.resolve(new Uint8Array(h as Uint8Array))), Promise.resolve(new Uint8Array(older.root)), node);
  return roots !== null && sameBytes(await roots[0], older.root) && sameBytes(await roots[1], newer.root);
}

export interface WitnessCheck {
  /** The installation checkpoint's size. */
  size: number;
  /** The witnesses whose cosignatures verified here. */
  cosigned: string[];
  failures: string[];
}

/**
 * Whether the organization checkpoint `orgNote` is an entry of the installation checkpoint in
 * `installation`, signed by `verifier`, and which of `witnesses` cosigned it (cosignature/v1, Ed25519
 * over `cosignature/v1\ntime <t>\n` and the checkpoint's body): the checks `verify --policy` makes.
 */
export async function verifyWitnessed(
  orgNote: string,
  installation: TInstallationInclusion,
  verifier: WebVerifier,
  witnesses: readonly { name: string; verifier_key: string }[],
): Promise<WitnessCheck> {
  const failures: string[] = [];
  const tree = await openCheckpoint(installation.checkpoint, verifier);
  if (tree.origin !== `${verifier.name}/installation` || tree.size !== installation.tree_size) failures.push('the installation checkpoint is not the one the answer names');
  const { text, signatures } = splitNote(installation.checkpoint);
  const cosigned: string[] = [];
  for (const witness of witnesses) {
    const parts = parseCosignerKeyText(witness.verifier_key);
    const id = new DataView((await sha256(cosignerKeyIdInput(parts.name, parts.publicKey))).buffer).getUint32(0);
    if (id !== parts.id) continue;
    const key = await crypto.subtle.importKey('raw', new Uint8Array(parts.publicKey), { name: 'Ed25519' }, false, ['verify']);
    for (const signature of signatures) {
      const time = signature.name === parts.name && signature.id === id ? cosignatureTime(signature.signature) : null;
      if (time === null) continue;
      if (await crypto.subtle.verify({ name: 'Ed25519' }, key, new Uint8Array(signature.signature.subarray(8)), utf8(cosignedMessage(text, time)))) {
        cosigned.push(witness.name);
        break;
      }
    }
  }
  const path = installation.inclusion_path.map((p) => fromBase64(p));
  const leaf = sha256(Uint8Array.of(0), utf8(installation.entry));
  const root = installation.entry === checkpointBody(orgNote) && path.every((p) => p?.length === 32)
    ? rootFromInclusion(installation.entry_index, tree.size, leaf, path.map((p) => Promise.resolve(new Uint8Array(p as Uint8Array))), node)
    : null;
  if (!root || !sameBytes(await root, tree.root)) failures.push(`the organization checkpoint is not entry ${installation.entry_index} of the installation tree`);
  return { size: tree.size, cosigned, failures };
}

export interface ProducerCheck {
  /** The producer key the binding entry names; null without one. */
  producerKey: string | null;
  /** Whether the event's producer signature verified with it. */
  signed: boolean;
  /** What did not check out, in words; empty when nothing is wrong (an unbound key's unsigned event included). */
  failures: string[];
}

/**
 * The producer-signature rules (domain/producerSignature.ts) for one event, given its key's binding
 * entry in the log (`bindingOf`; its inclusion proven by the caller) or null when none was found: an
 * event of a bound key must carry a signature that verifies with the producer key the entry names, and a
 * signed event whose key no entry binds fails. Nothing is pinned: the log is the only word on bindings.
 */
export async function verifyProducerSignature(event: TEvent, binding: TEvent | null): Promise<ProducerCheck> {
  const bound = binding ? bindingOf(binding) : null;
  if (binding && bound?.keyId !== event.api_key_id) {
    return { producerKey: null, signed: false, failures: [`entry ${binding.id}, given as the binding of API key ${event.api_key_id}, is not the service's binding entry of that key`] };
  }
  const check = new ProducerSignatureCheck();
  if (binding) await check.add(binding);
  await check.add(event);
  const { failures } = check.finish(true);
  return { producerKey: bound?.producerKey.trim() ?? null, signed: check.signed === 1, failures };
}
