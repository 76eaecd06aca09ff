/**
 * The ledger through the API: receipts on every write, signed checkpoints, inclusion proofs that verify
 * against the pinned key for every event, consistency between checkpoints, and two server processes on
 * one database signing identical checkpoints.
 */
import { eventSha256, leafBytes } from '../src/domain/ledger/eventHash';
import { leafHash, verifyConsistency, verifyInclusion } from '../src/domain/ledger/merkle';
import { parseCheckpoint } from '../src/domain/ledger/formats';
import { openNote, parseVerifierKey } from '../src/domain/ledger/note';
import { call, eventBody } from './helpers/api';
import { twoProcessesOnOneDatabase } from './helpers/cluster';
import { startTestApp, type TestApp, type TestOrg } from './helpers/harness';

const b64 = (s: string) => Buffer.from(s, 'base64');

async function verifiedCheckpoint(url: string, org: TestOrg, note: string) {
  const key = await call(`${url}/v1/ledger/key`, { key: org.key });
  return parseCheckpoint(openNote(note, parseVerifierKey(key.body.verifier_key)));
}

describe('in one process', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ label: 'ledger' });
  });
  afterAll(() => app.close());

  test('every write answers its receipt; every event\'s proof verifies against the signed checkpoint', async () => {
    const org = await app.org();
    const single = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ metadata: { z: 1, a: 'é' } }) });
    expect(single.body.ledger).toEqual({ leaf_index: 0, event_sha256: eventSha256(single.body.event) });
    const batch = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: 300 }, (_, i) => eventBody({ actor: { id: `l${i}` } })) } });
    expect(batch.body.ledger.map((r: { leaf_index: number }) => r.leaf_index)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
    const events = [single.body.event, ...batch.body.events];

    const key = await call(`${app.url}/v1/ledger/key`, { key: org.key });
    expect(key.body).toEqual({ key_name: 'ledger.test', verifier_key: expect.stringMatching(/^ledger\.test\+[0-9a-f]{8}\+/) });
    const verifier = parseVerifierKey(key.body.verifier_key);
    for (const [i, event] of events.entries()) {
      if (i % 7 !== 0 && i !== events.length - 1) continue;
      const res = await call(`${app.url}/v1/events/${event.id}/proof`, { key: org.key });
      expect(res.status).toBe(200);
      const proof = res.body;
      const checkpoint = parseCheckpoint(openNote(proof.checkpoint, verifier));
      expect(checkpoint.origin).toBe(`ledger.test/${org.id}`);
      expect(proof.tree_size).toBe(checkpoint.size);
      expect(proof.event_sha256).toBe(eventSha256(event));
      expect(b64(proof.leaf).equals(leafBytes(org.id, i + 1, eventSha256(event)))).toBe(true);
      expect(verifyInclusion(i, checkpoint.size, leafHash(b64(proof.leaf)), proof.inclusion_path.map(b64), checkpoint.root)).toBe(true);
    }

    const first = await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key });
    expect(first.body.tree_size).toBe(301);
    await call(`${app.url}/v1/events`, { key: org.key, body: eventBody() });
    const grown = await call(`${app.url}/v1/events/${(await call(`${app.url}/v1/events?limit=1`, { key: org.key })).body.data[0].id}/proof`, { key: org.key });
    const newer = await verifiedCheckpoint(app.url, org, grown.body.checkpoint);
    expect(newer.size).toBe(302);
    const consistency = await call(`${app.url}/v1/ledger/consistency?from=301&to=302`, { key: org.key });
    expect(consistency.status).toBe(200);
    expect(verifyConsistency(301, 302, consistency.body.proof.map(b64), b64(first.body.root_hash), newer.root)).toBe(true);
    // An old proof is asked for by its checkpoint's size.
    const old = await call(`${app.url}/v1/events/${events[5].id}/proof?tree_size=301`, { key: org.key });
    expect(old.body.checkpoint).toBe(first.body.checkpoint);
  });

  test('organizations have separate logs; unknown sizes and events are 404', async () => {
    const [a, b] = [await app.org(), await app.org()];
    const created = await call(`${app.url}/v1/events`, { key: a.key, body: eventBody() });
    expect((await call(`${app.url}/v1/ledger/checkpoint`, { key: b.key })).body.code).toBe('CHECKPOINT_NOT_FOUND');
    expect((await call(`${app.url}/v1/events/${created.body.event.id}/proof`, { key: b.key })).status).toBe(404);
    expect((await call(`${app.url}/v1/events/${created.body.event.id}/proof?tree_size=7`, { key: a.key })).body.code).toBe('CHECKPOINT_NOT_FOUND');
    const proof = await call(`${app.url}/v1/events/${created.body.event.id}/proof`, { key: a.key });
    expect((await verifiedCheckpoint(app.url, a, proof.body.checkpoint)).origin).toBe(`ledger.test/${a.id}`);
    expect((await call(`${app.url}/v1/ledger/consistency?from=5`, { key: a.key })).status).toBe(400);
  });

  test('the newest checkpoint is found through the log\'s head; a head left behind or missing is put right', async () => {
    const org = await app.org();
    const newest = async () => (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body.tree_size as number;
    const proofOfNew = async () => {
      const created = await call(`${app.url}/v1/events`, { key: org.key, body: eventBody() });
      return (await call(`${app.url}/v1/events/${created.body.event.id}/proof`, { key: org.key })).body.tree_size as number;
    };
    expect(await proofOfNew()).toBe(1);
    expect(await proofOfNew()).toBe(2);
    const heads = app.services.collections.ledgerHeads;
    expect(await heads.findOne({ _id: org.id })).toEqual({ _id: org.id, size: 2 });
    expect(await newest()).toBe(2);

    // A crash between storing checkpoint 2 and raising the head: it still names 1, and the API says 1.
    await heads.updateOne({ _id: org.id }, { $set: { size: 1 } });
    expect(await newest()).toBe(1);
    // The next round raises it past the checkpoint it missed.
    expect(await proofOfNew()).toBe(3);
    expect(await newest()).toBe(3);

    // No head at all (a log signed before heads existed): the newest is found once and becomes the head.
    await heads.deleteOne({ _id: org.id });
    expect(await newest()).toBe(3);
    expect(await heads.findOne({ _id: org.id })).toEqual({ _id: org.id, size: 3 });
  });
});

describe('two server processes on one database', () => {
  const cluster = twoProcessesOnOneDatabase('ledgertwo');

  test('sign identical checkpoints, whichever integrates', async () => {
    const app = cluster.app();
    const org = await app.org();
    const [one, two] = cluster.servers();
    for (let i = 0; i < 6; i++) {
      const server = i % 2 ? one : two;
      await call(`${server.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: 50 }, () => eventBody()) } });
    }
    // A proof of the newest event waits for the checkpoint that includes it.
    const newestEvent = (await call(`${one.url}/v1/events?limit=1`, { key: org.key })).body.data[0];
    expect((await call(`${two.url}/v1/events/${newestEvent.id}/proof`, { key: org.key })).body.tree_size).toBe(300);
    const fromOne = await call(`${one.url}/v1/ledger/checkpoint`, { key: org.key });
    const fromTwo = await call(`${two.url}/v1/ledger/checkpoint`, { key: org.key });
    expect(fromOne.body).toEqual(fromTwo.body);
    // Every checkpoint stored is consistent with the newest: one history.
    const newest = await verifiedCheckpoint(one.url, org, fromOne.body.checkpoint);
    const all = await app.services.collections.ledgerCheckpoints.find({ tenant: org.id }).sort({ size: -1 }).toArray();
    expect(all.length).toBeGreaterThan(0);
    for (const checkpoint of all) {
      const res = await call(`${two.url}/v1/ledger/consistency?from=${checkpoint.size}&to=${newest.size}`, { key: org.key });
      expect(verifyConsistency(checkpoint.size, newest.size, res.body.proof.map(b64), b64(checkpoint.root), newest.root)).toBe(true);
    }
  });
});
