/**
 * The witness formats as text, without crypto, for the server, the CLI and the dashboard alike:
 * cosignatures (c2sp.org/tlog-cosignature v1.0.1, `cosignature/v1` with Ed25519, signature type 0x04),
 * trust policies (c2sp.org/tlog-policy), the `add-checkpoint` request and answers of c2sp.org/tlog-witness
 * v1.0.0, and the installation log's entries (an organization checkpoint's body).
 */
import { fromBase64, keyIdInputOf, keyTextOf, NoteError, parseKeyTextOf, toBase64, type VerifierKeyParts } from './formats';

export const ALG_COSIGNATURE_V1 = 0x04;
const DASH = '\u2014';
/** A cosignature/v1 signature: an 8-byte big-endian timestamp and a 64-byte Ed25519 signature. */
export const COSIGNATURE_BYTES = 8 + 64;

/** What a witness signs for `body` (a checkpoint's text: origin, size, root lines) at `timestamp` (Unix seconds). */
export function cosignedMessage(body: string, timestamp: number): string {
  return `cosignature/v1\ntime ${timestamp}\n${body}`;
}

/** What a cosigner's key id hashes: name ‖ "\n" ‖ 0x04 ‖ public key. */
export function cosignerKeyIdInput(name: string, publicKey: Uint8Array): Uint8Array {
  return keyIdInputOf(ALG_COSIGNATURE_V1, name, publicKey);
}

/** `<name>+<hex id>+<base64(0x04 ‖ public key)>`. */
export function cosignerKeyText(name: string, id: number, publicKey: Uint8Array): string {
  return keyTextOf(ALG_COSIGNATURE_V1, name, id, publicKey);
}

/** A witness's verifier key: the note key format with the cosignature type. */
export type CosignerKeyParts = VerifierKeyParts;

/** A witness's verifier key `<name>+<hex id>+<base64(0x04 ‖ public key)>`. */
export function parseCosignerKeyText(text: string): CosignerKeyParts {
  return parseKeyTextOf(ALG_COSIGNATURE_V1, 'not an Ed25519 cosignature/v1 key (type 0x04)', text);
}

/** One signature line of a note: its key name, key id and signature bytes (after the id). */
export interface NoteSignature {
  name: string;
  id: number;
  signature: Uint8Array;
  line: string;
}

/** Parses signature lines (`— <name> <base64(id ‖ signature)>\n` each); throws on a malformed one. */
export function parseSignatureLines(lines: string): NoteSignature[] {
  if (lines === '') return [];
  if (!lines.endsWith('\n')) throw new NoteError('signature lines end in a newline');
  return lines
    .slice(0, -1)
    .split('\n')
    .map((line) => {
      const match = new RegExp(`^${DASH} (\\S+) (\\S+)$`).exec(line);
      const raw = match ? fromBase64(match[2] as string) : null;
      if (!match || !raw || raw.length < 5) throw new NoteError(`malformed signature line: ${JSON.stringify(line)}`);
      return { name: match[1] as string, id: new DataView(raw.buffer, raw.byteOffset).getUint32(0), signature: raw.subarray(4), line: `${line}\n` };
    });
}

/** A signed note's text: everything before the blank line that opens its signatures (what a cosignature signs). */
export function noteText(note: string): string {
  return note.slice(0, note.lastIndexOf('\n\n') + 1);
}

/** A note's text and every signature on it. */
export function splitNote(note: string): { text: string; signatures: NoteSignature[] } {
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) throw new NoteError('not a signed note');
  return { text: note.slice(0, split + 1), signatures: parseSignatureLines(note.slice(split + 2)) };
}

/** The timestamp (Unix seconds) of a cosignature/v1 signature, or null when it is not one. */
export function cosignatureTime(signature: Uint8Array): number | null {
  if (signature.length !== COSIGNATURE_BYTES) return null;
  const view = new DataView(signature.buffer, signature.byteOffset);
  const time = view.getBigUint64(0);
  return time > BigInt(Number.MAX_SAFE_INTEGER) ? null : Number(time);
}

// ---- c2sp.org/tlog-policy ----

export interface PolicyWitness {
  name: string;
  key: CosignerKeyParts;
  keyText: string;
  /** The submission prefix (`<url>/add-checkpoint`), when given. */
  url: string | null;
}

export interface PolicyGroup {
  name: string;
  threshold: number;
  members: string[];
}

export interface Policy {
  /** The logs' verifier keys as written (`log <vkey> [url]`). */
  logs: string[];
  witnesses: PolicyWitness[];
  groups: PolicyGroup[];
  /** A witness's or a group's name, or `none`. */
  quorum: string;
}

/** Parses a policy file; throws a NoteError naming the line that is wrong. */
export function parsePolicy(text: string): Policy {
  const policy: Policy = { logs: [], witnesses: [], groups: [], quorum: '' };
  const names = new Set<string>();
  const keys = new Set<string>();
  text.split('\n').forEach((raw, i) => {
    const fail = (why: string): never => {
      throw new NoteError(`policy line ${i + 1}: ${why}`);
    };
    // eslint-disable-next-line no-control-regex
    if (/[\x00-\x08\x0b-\x1f\x7f]/.test(raw)) fail('control characters are not allowed');
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const [keyword, ...args] = line.split(/[ \t]+/) as [string, ...string[]];
    switch (keyword) {
      case 'log':
        if (args.length < 1 || args.length > 2) fail('log <vkey> [<url>]');
        policy.logs.push(args[0] as string);
        return;
      case 'witness': {
        if (args.length < 2 || args.length > 3) fail('witness <name> <vkey> [<url>]');
        const [name, keyText, url] = args as [string, string, string | undefined];
        if (names.has(name) || name === 'none') fail(`the name ${name} is defined twice`);
        let key: CosignerKeyParts;
        try {
          key = parseCosignerKeyText(keyText);
        } catch (error) {
          return fail((error as Error).message);
        }
        const raw = toBase64(key.publicKey);
        if (keys.has(raw)) fail(`witness ${name} has the key of another witness`);
        keys.add(raw);
        names.add(name);
        policy.witnesses.push({ name, key, keyText, url: url ?? null });
        return;
      }
      case 'group': {
        const [name, threshold, ...members] = args as [string, string, ...string[]];
        if (!name || !threshold || members.length === 0) fail('group <name> all|any|<k> <name>...');
        if (names.has(name) || name === 'none') fail(`the name ${name} is defined twice`);
        if (new Set(members).size !== members.length) fail('a group lists a member at most once');
        for (const member of members) if (!names.has(member)) fail(`${member} is not defined on a line before`);
        const k = threshold === 'all' ? members.length : threshold === 'any' ? 1 : /^[1-9][0-9]*$/.test(threshold) ? Number(threshold) : 0;
        if (k < 1 || k > members.length) fail(`the threshold ${threshold} is not all, any or 1 to ${members.length}`);
        names.add(name);
        policy.groups.push({ name, threshold: k, members });
        return;
      }
      case 'quorum':
        if (args.length !== 1) fail('quorum <name>');
        if (policy.quorum !== '') fail('a policy has exactly one quorum line');
        if (args[0] !== 'none' && !names.has(args[0] as string)) fail(`${args[0]} is not defined on a line before`);
        policy.quorum = args[0] as string;
        return;
      default:
        fail(`unknown keyword ${JSON.stringify(keyword)}`);
    }
  });
  if (policy.quorum === '') throw new NoteError('the policy has no quorum line');
  return policy;
}

/** Whether the witnesses named (those whose cosignatures verified) meet the policy's quorum. */
export function quorumMet(policy: Policy, cosigned: ReadonlySet<string>): boolean {
  if (policy.quorum === 'none') return true;
  const groups = new Map(policy.groups.map((group) => [group.name, group]));
  const met = (name: string): boolean => {
    const group = groups.get(name);
    if (!group) return cosigned.has(name);
    return group.members.filter(met).length >= group.threshold;
  };
  return met(policy.quorum);
}

// ---- c2sp.org/tlog-witness v1.0.0: add-checkpoint ----

/** The largest consistency proof a request may carry. */
export const MAX_PROOF_LINES = 63;

/** The body of `POST <prefix>/add-checkpoint`. */
export function addCheckpointBody(oldSize: number, proof: readonly Uint8Array[], note: string): string {
  return `old ${oldSize}\n${proof.map((hash) => `${toBase64(hash)}\n`).join('')}\n${note}`;
}

/** Parses an add-checkpoint body; throws a NoteError for a malformed one (a 400). */
export function parseAddCheckpointBody(body: string): { oldSize: number; proof: Uint8Array[]; note: string } {
  const end = body.indexOf('\n\n');
  if (end < 0) throw new NoteError('no empty line before the checkpoint');
  const [first, ...hashes] = body.slice(0, end).split('\n') as [string, ...string[]];
  const match = /^old (0|[1-9][0-9]{0,15})$/.exec(first);
  if (!match) throw new NoteError('the first line is not "old <size>"');
  if (hashes.length > MAX_PROOF_LINES) throw new NoteError(`more than ${MAX_PROOF_LINES} proof lines`);
  const proof = hashes.map((line) => {
    const hash = fromBase64(line);
    if (!hash || hash.length !== 32) throw new NoteError('a proof line is not a base64 SHA-256 hash');
    return hash;
  });
  const oldSize = Number(match[1]);
  if (!Number.isSafeInteger(oldSize)) throw new NoteError('the old size is too large');
  return { oldSize, proof, note: body.slice(end + 2) };
}

/** The content type of a 409 answer, whose body is the witness's size. */
export const SIZE_CONTENT_TYPE = 'text/x.tlog.size';

// ---- the installation log ----

/** The installation log's entry for an organization checkpoint: its body, the three lines of its note's text. */
export function checkpointBody(note: string): string {
  return noteText(note).split('\n').slice(0, 3).join('\n') + '\n';
}
