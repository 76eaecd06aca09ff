/**
 * The dashboard's in-browser ledger checks, run here on Node's WebCrypto against a real server through
 * the session procedures the dashboard calls: an event's inclusion and signature verified from the
 * fields it shows, and the browser's memory of the log (pinned key, last verified checkpoint) catching
 * a rewritten log, a replaced key and another organization's log. The Chromium suite runs the same
 * code in a browser.
 */
import { randomBytes } from 'node:crypto';
import { checkpointText, NoteError, parseCheckpoint } from '../../src/domain/ledger/formats';
import { consistencyProof, nodesOf, rootHash, verifyConsistency as nodeVerifyConsistency } from '../../src/domain/ledger/merkle';
import { openNote, signerFromSeed, signNote } from '../../src/domain/ledger/note';
import { importVerifier, openCheckpoint, verifyConsistency, verifyEventInclusion } from '../../src/client/webVerify';
import { checkCheckpoint, checkEvent, storageKey } from '../../src/dashboard/lib/ledgerTrust';
import { MemoryStore } from '../helpers/memoryStore';
import type { TInclusionProof } from '../../src/domain/ledger/schemas';
import { createEvent } from '../helpers/api';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp } from '../helpers/harness';
import { failure, uniqueEmail, WebSession } from '../helpers/webSession';
import { eventuallySucceeds } from '../helpers/waiting';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ label: 'ledgerweb' });
});
afterAll(() => app.close());

/** An account with a key, its organization's id, and `n` events sent over REST. */
async function accountWithEvents(n: number) {
  const web = new WebSession(app.url);
  await web.signup(uniqueEmail('ledgerweb'));
  const org = (await web.client.account.me.query())?.organization.id ?? '';
  // Made directly, not from the dashboard, so that the events are leaves 0…n−1 (a dashboard key's creation is on the log's record).
  const { key } = await app.key(org);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await createEvent(app.url, key, { actor: { id: `actor-${i}` } })).id);
  return { web, key, org, ids };
}

/** The session's proof of an event; its checkpoint is signed within an interval or two of the write. */
async function proofOf(web: WebSession, id: string): Promise<TInclusionProof> {
  return eventuallySucceeds(`the proof of ${id}`, () => web.client.dashboard.events.proof.query({ id }), 10_000);
}

const fetcher = (web: WebSession) => async (from: number, to: number) => (await web.client.dashboard.ledger.consistency.query({ from, to })).proof;

describe('an event verified in the browser', () => {
  test('its proof verifies from the fields shown; a changed field, path, place or checkpoint fails, naming it', async () => {
    const { web, ids } = await accountWithEvents(5);
    const servedKey = (await web.client.dashboard.ledger.summary.query()).verifier_key;
    const verifier = await importVerifier(servedKey);
    for (const id of ids) {
      const event = await web.client.dashboard.events.get.query({ id });
      const proof = await proofOf(web, id);
      const verified = await verifyEventInclusion(event, proof, verifier);
      expect(verified.failures).toEqual([]);
      expect(verified.checkpoint.size).toBe(proof.tree_size);
    }

    const id = ids[2] as string;
    const event = await web.client.dashboard.events.get.query({ id });
    const proof = await proofOf(web, id);
    const changed = await verifyEventInclusion({ ...event, actor_name: 'Mallory' }, proof, verifier);
    expect(changed.failures).toEqual(['the event differs from the one the server hashed', 'the event differs from the one the server committed to', `the event is not sequence number 3 of the signed tree of ${proof.tree_size}`]);
    const flipped = proof.inclusion_path.map((p, i) => (i === 0 ? Buffer.from(randomBytes(32)).toString('base64') : p));
    expect((await verifyEventInclusion(event, { ...proof, inclusion_path: flipped }, verifier)).failures).toEqual([`the event is not sequence number 3 of the signed tree of ${proof.tree_size}`]);
    expect((await verifyEventInclusion(event, { ...proof, leaf_index: 3 }, verifier)).failures).toEqual([`the event is not sequence number 4 of the signed tree of ${proof.tree_size}`]);
    expect((await verifyEventInclusion(event, { ...proof, inclusion_path: proof.inclusion_path.slice(1) }, verifier)).failures).toHaveLength(1);

    // The checkpoint: its text changed, or signed by another key.
    const altered = proof.checkpoint.replace(`\n${proof.tree_size}\n`, `\n${proof.tree_size + 1}\n`);
    await expect(verifyEventInclusion(event, { ...proof, checkpoint: altered }, verifier)).rejects.toThrow('the signature by ledger.test does not verify');
    const impostor = signerFromSeed('ledger.test', randomBytes(32));
    const forged = signNote(openNote(proof.checkpoint, TEST_LEDGER_SIGNER), impostor);
    await expect(verifyEventInclusion(event, { ...proof, checkpoint: forged }, verifier)).rejects.toThrow('no signature by ledger.test');
    await expect(importVerifier(servedKey.replace(/\+[0-9a-f]{8}\+/, '+00000000+'))).rejects.toThrow(NoteError);
  });

  test('the session procedures are the organization\'s own: another account gets 404, no session 401', async () => {
    const alice = await accountWithEvents(1);
    const bob = new WebSession(app.url);
    await bob.signup(uniqueEmail('ledgerweb'));
    expect(await failure(bob.client.dashboard.events.proof.query({ id: alice.ids[0] as string }))).toMatchObject({ status: 404, message: 'Event not found' });
    expect(await failure(bob.client.dashboard.ledger.consistency.query({ from: 0, to: 1 }))).toMatchObject({ status: 404, code: 'CHECKPOINT_NOT_FOUND' });
    const anonymous = new WebSession(app.url);
    for (const attempt of [anonymous.client.dashboard.events.proof.query({ id: alice.ids[0] as string }), anonymous.client.dashboard.ledger.consistency.query({ from: 0 })]) {
      expect(await failure(attempt)).toEqual({ status: 401, code: 'NOT_SIGNED_IN', message: 'Not signed in' });
    }
  });
});

test('WebCrypto consistency checks agree with the server\'s on every pair of sizes up to 40, proofs good and bad', async () => {
  const leaves = Array.from({ length: 40 }, () => randomBytes(32));
  const nodes = nodesOf(leaves);
  const checkpointOf = async (size: number) => ({ origin: 'o', size, root: await rootHash(nodes, size) });
  for (let to = 1; to <= 40; to++) {
    const newer = await checkpointOf(to);
    for (let from = 1; from <= to; from++) {
      const older = await checkpointOf(from);
      const proof = await consistencyProof(nodes, from, to);
      const b64 = proof.map((p) => p.toString('base64'));
      expect(await verifyConsistency(older, newer, b64)).toBe(true);
      expect(nodeVerifyConsistency(from, to, proof, older.root, newer.root)).toBe(true);
      if (proof.length > 0) {
        const bad = [...b64];
        bad[from % bad.length] = randomBytes(32).toString('base64');
        expect(await verifyConsistency(older, newer, bad)).toBe(false);
        expect(await verifyConsistency(older, newer, b64.slice(0, -1))).toBe(false);
      }
      if (from < to) expect(await verifyConsistency(older, { ...newer, root: randomBytes(32) }, b64)).toBe(false);
    }
  }
});

describe('what the browser remembers of the log', () => {
  test('first checkpoint remembered; the same again; a newer one proven to extend it; an older one proven extended', async () => {
    const { web, org, ids } = await accountWithEvents(3);
    const store = new MemoryStore();
    const servedKey = (await web.client.dashboard.ledger.summary.query()).verifier_key;
    const first = await proofOf(web, ids[2] as string);
    expect(first.tree_size).toBe(3);
    expect(await checkCheckpoint(store, org, servedKey, first.checkpoint, fetcher(web))).toEqual({ kind: 'first', size: 3 });
    expect(JSON.parse(store.getItem(storageKey(org)) ?? '{}')).toMatchObject({ verifier_key: servedKey, note: first.checkpoint });
    expect(await checkCheckpoint(store, org, servedKey, first.checkpoint, fetcher(web))).toEqual({ kind: 'same', size: 3 });

    const later = await proofOf(web, (await createEvent(app.url, (await app.key(org)).key)).id);
    expect(later.tree_size).toBe(4);
    const event = await web.client.dashboard.events.get.query({ id: later.event_id });
    expect(await checkEvent(store, org, servedKey, event, later, fetcher(web))).toEqual({ failures: [], trust: { kind: 'extends', size: 4, from: 3 } });
    expect(JSON.parse(store.getItem(storageKey(org)) ?? '{}').note).toBe(later.checkpoint);
    expect(await checkCheckpoint(store, org, servedKey, first.checkpoint, fetcher(web))).toEqual({ kind: 'earlier', size: 3, remembered: 4 });
  });

  test('a log rewritten since, a replaced key, another organization\'s log or a bad signature are said loudly, and stay said', async () => {
    const { web, org, ids } = await accountWithEvents(4);
    const servedKey = (await web.client.dashboard.ledger.summary.query()).verifier_key;
    const real = await proofOf(web, ids[3] as string);
    const realCheckpoint = parseCheckpoint(openNote(real.checkpoint, TEST_LEDGER_SIGNER));

    // The server once showed this browser another history: a checkpoint of 2 events, signed with the real key.
    const store = new MemoryStore();
    const fork = signNote(checkpointText({ origin: realCheckpoint.origin, size: 2, root: randomBytes(32) }), TEST_LEDGER_SIGNER);
    expect((await checkCheckpoint(store, org, servedKey, fork, fetcher(web))).kind).toBe('first');
    const rewritten = await checkCheckpoint(store, org, servedKey, real.checkpoint, fetcher(web));
    expect(rewritten).toMatchObject({ kind: 'rewritten', reason: 'the checkpoint of 4 events and the one of 2 verified here before are not the same log' });
    // The remembered checkpoint is kept: asking again says it again.
    expect(JSON.parse(store.getItem(storageKey(org)) ?? '{}').note).toBe(fork);
    expect((await checkCheckpoint(store, org, servedKey, real.checkpoint, fetcher(web))).kind).toBe('rewritten');
    // Same size, another root.
    const sameSize = new MemoryStore();
    await checkCheckpoint(sameSize, org, servedKey, signNote(checkpointText({ ...realCheckpoint, root: randomBytes(32) }), TEST_LEDGER_SIGNER), fetcher(web));
    expect((await checkCheckpoint(sameSize, org, servedKey, real.checkpoint, fetcher(web))).kind).toBe('rewritten');

    // The server presents another key than the one pinned.
    const pinned = new MemoryStore();
    await checkCheckpoint(pinned, org, servedKey, real.checkpoint, fetcher(web));
    const otherKey = signerFromSeed('ledger.test', randomBytes(32)).text;
    expect(await checkCheckpoint(pinned, org, otherKey, real.checkpoint, fetcher(web))).toEqual({ kind: 'key-changed', pinned: servedKey, served: otherKey });

    // Another organization's log, or a checkpoint the pinned key did not sign.
    const other = await accountWithEvents(1);
    const theirs = await proofOf(other.web, other.ids[0] as string);
    expect(await checkCheckpoint(pinned, org, servedKey, theirs.checkpoint, fetcher(web))).toMatchObject({
      kind: 'rewritten', reason: `the checkpoint is of the log ${parseCheckpoint(openNote(theirs.checkpoint, TEST_LEDGER_SIGNER)).origin}, not this organization's`,
    });
    const unsigned = signNote(openNote(real.checkpoint, TEST_LEDGER_SIGNER), signerFromSeed('ledger.test', randomBytes(32)));
    expect(await checkCheckpoint(pinned, org, servedKey, unsigned, fetcher(web))).toMatchObject({ kind: 'rewritten', reason: expect.stringContaining('not signed by the pinned key') });
  });
});

test('a checkpoint opened with WebCrypto is the one Node opens', async () => {
  const note = signNote(checkpointText({ origin: 'ledger.test/org', size: 7, root: randomBytes(32) }), TEST_LEDGER_SIGNER);
  expect(await openCheckpoint(note, await importVerifier(TEST_LEDGER_SIGNER.text))).toEqual(parseCheckpoint(openNote(note, TEST_LEDGER_SIGNER)));
});
