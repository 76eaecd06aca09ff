/**
 * The ledger's byte formats: signed notes against the fixtures of Go's golang.org/x/mod/sumdb/note,
 * checkpoints, RFC 8785 canonical JSON, event hashes and leaf bytes.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { eventCommitment, eventSha256, leafBytes } from '../../src/domain/ledger/eventHash';
import { hashInputOfEvent } from '../../src/domain/eventFields';
import { canonicalEventText, canonicalJson, checkpointText, commitmentInput, NoteError, parseCheckpoint, saltBytes } from '../../src/domain/ledger/formats';

/** Canonical JSON, or null for what it cannot represent (unpaired surrogates, -0 is fine). */
function canonicalOrNull(value: unknown): string | null {
  try {
    return canonicalJson(value);
  } catch {
    return null;
  }
}
import {
  openNote, parsePrivateKey, parseVerifierKey, privateKeyText, signerFromSeed, signNote,
} from '../../src/domain/ledger/note';

// From the documentation of golang.org/x/mod/sumdb/note.
const GO_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const GO_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const GO_NOTE = `${GO_TEXT}\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`;

describe('signed notes, as Go writes them', () => {
  test('the private key gives Go\'s verifier key and Go\'s signature, byte for byte', () => {
    const signer = parsePrivateKey(GO_SKEY);
    expect(signer.text).toBe(GO_VKEY);
    expect(signNote(GO_TEXT, signer)).toBe(GO_NOTE);
    expect(privateKeyText(signer.name, Buffer.from('AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz', 'base64').subarray(1))).toBe(GO_SKEY);
  });

  test('open checks the signature of the known key, ignores others, and refuses any change', () => {
    const verifier = parseVerifierKey(GO_VKEY);
    expect(openNote(GO_NOTE, verifier)).toBe(GO_TEXT);
    const other = signerFromSeed('Witness', Buffer.alloc(32, 7));
    const cosigned = signNote(GO_TEXT, other).replace(GO_TEXT + '\n', GO_NOTE);
    expect(openNote(cosigned, verifier)).toBe(GO_TEXT);
    expect(() => openNote(GO_NOTE.replace('cryptography', 'cryptographY'), verifier)).toThrow(NoteError);
    expect(() => openNote(signNote(GO_TEXT, other), verifier)).toThrow('no signature by PeterNeumann');
    // Same name, another key: its id differs, so it does not count as the known key's signature.
    expect(() => openNote(signNote(GO_TEXT, signerFromSeed('PeterNeumann', Buffer.alloc(32, 1))), verifier)).toThrow('no signature by PeterNeumann');
  });

  test('keys and notes that are not well formed are refused', () => {
    expect(() => parseVerifierKey(GO_VKEY.replace('c74f20a3', 'c74f20a4'))).toThrow(NoteError);
    expect(() => parseVerifierKey('PeterNeumann+c74f20a3')).toThrow(NoteError);
    expect(() => signerFromSeed('has space', Buffer.alloc(32))).toThrow(NoteError);
    expect(() => signerFromSeed('a+b', Buffer.alloc(32))).toThrow(NoteError);
    expect(() => openNote(GO_TEXT, parseVerifierKey(GO_VKEY))).toThrow(NoteError);
  });
});

test('checkpoints: C2SP tlog-checkpoint bodies', () => {
  const root = createHash('sha256').update('x').digest();
  const text = checkpointText({ origin: 'ledger.example.com/org_1', size: 42, root });
  expect(text).toBe(`ledger.example.com/org_1\n42\n${root.toString('base64')}\n`);
  expect(parseCheckpoint(text)).toEqual({ origin: 'ledger.example.com/org_1', size: 42, root });
  expect(() => parseCheckpoint('o\n042\nAAAA\n')).toThrow(NoteError);
  expect(() => parseCheckpoint(`o\n1\n${root.toString('base64').replace(/=$/, '')}\n`)).toThrow(NoteError);
});

describe('canonical JSON and what the ledger hashes', () => {
  test('RFC 8785: sorted keys by UTF-16 code units, ECMAScript numbers, minimal escapes', () => {
    expect(canonicalJson({ b: [3, { d: true, c: null }], a: 'x', '\u20ac': 1, '\r': 2, '1': 3, '\u00f6': 4 })).toBe(
      '{"\\r":2,"1":3,"a":"x","b":[3,{"c":null,"d":true}],"\u00f6":4,"\u20ac":1}',
    );
    expect(canonicalJson([1e30, 4.5e-7, -0, 0.000001, 1e21, 333333333.3333333])).toBe('[1e+30,4.5e-7,0,0.000001,1e+21,333333333.3333333]');
    expect(canonicalJson('\u2028\u0000\u007f"\\')).toBe('"\u2028\\u0000\u007f\\"\\\\"');
    expect(() => canonicalJson({ bad: '\ud800' })).toThrow();
    expect(() => canonicalJson({ '\udc00key': 1 })).toThrow('Lone surrogate');
    expect(canonicalJson({ '\ud83d\ude00': ['\ud83d\ude00'] })).toBe('{"😀":["😀"]}');
  });

  test('the written-out forms equal the canonicalizer\'s: stored events\' hashes and leaves', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string(), fc.option(fc.string(), { nil: null }), fc.nat(), (value, text, maybe, seq) => {
        fc.pre(canonicalOrNull(value) !== null && text.isWellFormed() && (maybe ?? '').isWellFormed());
        const metadata = typeof value === 'object' && value !== null && !Array.isArray(value) ? value : { value };
        const event = {
          id: text, timestamp: '2024-01-15T10:30:00.000Z', actor_id: `a${text}`, actor_name: maybe, actor_email: null, action: 'x.y',
          resource_type: text, resource_id: 'r', resource_name: maybe, metadata: metadata as Record<string, unknown>, organization_id: text, api_key_id: 'k',
        };
        expect(canonicalEventText(hashInputOfEvent(event))).toBe(canonicalJson(event));
        expect(leafBytes(text, seq, { v: 1, hash: 'ab' }).toString()).toBe(canonicalJson({ event_sha256: 'ab', org: text, seq, v: 1 }));
        expect(leafBytes(text, seq, { v: 2, hash: 'cd' }).toString()).toBe(canonicalJson({ event_commitment: 'cd', org: text, seq, v: 2 }));
      }),
      { seed: 8785, numRuns: 500 },
    );
  });

  test('an event\'s hash and leaf, spelled out', () => {
    const event = {
      id: '0190c8e4-0000-7000-8000-000000000001', timestamp: '2024-01-15T10:30:00.000Z', actor_id: 'user_123', actor_name: null,
      actor_email: 'jane@example.com', action: 'user.role_changed', resource_type: 'user', resource_id: 'user_456', resource_name: null,
      metadata: { z: 1, a: [true, 'é'] }, organization_id: 'org_1', api_key_id: 'key_1',
    };
    const canonical =
      '{"action":"user.role_changed","actor_email":"jane@example.com","actor_id":"user_123","actor_name":null,"api_key_id":"key_1",' +
      '"id":"0190c8e4-0000-7000-8000-000000000001","metadata":{"a":[true,"é"],"z":1},"organization_id":"org_1",' +
      '"resource_id":"user_456","resource_name":null,"resource_type":"user","timestamp":"2024-01-15T10:30:00.000Z"}';
    const hash = createHash('sha256').update(canonical, 'utf8').digest('hex');
    expect(eventSha256(hashInputOfEvent(event))).toBe(hash);
    expect(leafBytes('org_1', 7, { v: 1, hash }).toString()).toBe(`{"event_sha256":"${hash}","org":"org_1","seq":7,"v":1}`);
    // v2: SHA-256 over the domain prefix, the salt's 32 bytes and the same canonical text.
    const salt = '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';
    const commitment = createHash('sha256').update('audit-ledger/event/v2\n').update(Buffer.from(salt, 'hex')).update(canonical, 'utf8').digest('hex');
    expect(eventCommitment(hashInputOfEvent(event), salt)).toBe(commitment);
    // The same bytes as the browser's and verifiers' commitmentInput: the service builds them with Buffers (eventHash.ts).
    expect(createHash('sha256').update(commitmentInput(saltBytes(salt) as Uint8Array, canonical)).digest('hex')).toBe(commitment);
    expect(leafBytes('org_1', 7, { v: 2, hash: commitment }).toString()).toBe(`{"event_commitment":"${commitment}","org":"org_1","seq":7,"v":2}`);
  });

  test('a guess of a pruned event cannot be confirmed from its v2 leaf without the salt', () => {
    const event = {
      id: '0190c8e4-0000-7000-8000-000000000002', timestamp: '2024-01-15T10:30:00.000Z', actor_id: 'user_9', actor_name: null,
      actor_email: 'guess@example.com', action: 'user.login', resource_type: 'session', resource_id: 's1', resource_name: null,
      metadata: {}, organization_id: 'org_1', api_key_id: 'key_1',
    };
    const salt = '7f'.repeat(32);
    const leaf = leafBytes('org_1', 3, { v: 2, hash: eventCommitment(hashInputOfEvent(event), salt) }).toString();
    // The exact content, guessed right, hashed every way a guesser can without the salt: no match.
    const guess = hashInputOfEvent(event);
    expect(leaf).not.toContain(eventSha256(guess));
    for (const other of ['00'.repeat(32), 'ff'.repeat(32), '7f'.repeat(31) + '7e']) expect(leaf).not.toContain(eventCommitment(guess, other));
    // With the salt (what the owner of the event holds until it is pruned), it is confirmed.
    expect(leaf).toContain(eventCommitment(guess, salt));
  });
});
