/**
 * The ledger through the API: receipts on every write, signed checkpoints, inclusion proofs that verify
 * against the pinned key for every event, consistency between checkpoints, and two server processes on
 * one database signing identical checkpoints.
 */
import { eventCommitment, eventSha256, leafBytes } from '../../src/domain/ledger/eventHash';
import type { TEvent } from '../../src/domain/event';
import { hashInputOfEvent } from '../../src/domain/eventFields';
import { leafHash, verifyConsistency, verifyInclusion } from '../../src/domain/ledger/merkle';
import { parseCheckpoint } from '../../src/domain/ledger/formats';
import { openNote, parseVerifierKey } from '../../src/domain/ledger/note';
import type { CommandStartedEvent, Document } from 'mongodb';
import { call, eventBody } from '../helpers/api';
import { twoProcessesOnOneDatabase } from '../helpers/cluster';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { queryShapeProblem } from '../helpers/queryShapes';

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
    const salt = single.body.ledger.salt;
    expect(salt).toMatch(/^[0-9a-f]{64}$/);
    expect(single.body.ledger).toEqual({ seq: 1, leaf_index: 0, event_sha256: eventSha256(hashInputOfEvent(single.body.event)), salt, event_commitment: eventCommitment(hashInputOfEvent(single.body.event), salt) });
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
      expect(proof.event_sha256).toBe(eventSha256(hashInputOfEvent(event)));
      // New events have v2 leaves: the salted commitment, recomputed here from the event and the proof's salt.
      expect(proof.event_commitment).toBe(eventCommitment(hashInputOfEvent(event), proof.salt));
      expect(b64(proof.leaf).equals(leafBytes(org.id, i + 1, { v: 2, hash: eventCommitment(hashInputOfEvent(event), proof.salt) }))).toBe(true);
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

  test('a receipt is the event\'s hash whoever answers it: the write, a replay before its checkpoint, a replay after', async () => {
    const org = await app.org();
    const body = { events: Array.from({ length: 5 }, (_, i) => eventBody({ actor: { id: `r${i}` }, metadata: { z: i, a: ['é', { y: null, b: true }] } })) };
    const headers = { 'idempotency-key': 'receipts-1' };
    const written = await call(`${app.url}/v1/events/batch`, { key: org.key, body, headers });
    expect(written.status).toBe(201);
    const receipts = written.body.events.map((event: TEvent, i: number) => {
      const salt = written.body.ledger[i].salt as string;
      return { seq: i + 1, leaf_index: i, event_sha256: eventSha256(hashInputOfEvent(event)), salt, event_commitment: eventCommitment(hashInputOfEvent(event), salt) };
    });
    expect(written.body.ledger).toEqual(receipts);
    // At once (the hashes still wait for integration in this process), then once a checkpoint covers them.
    const early = await call(`${app.url}/v1/events/batch`, { key: org.key, body, headers });
    expect(early.headers.get('idempotent-replayed')).toBe('true');
    expect(early.body.ledger).toEqual(receipts);
    expect((await call(`${app.url}/v1/events/${written.body.events[4].id}/proof`, { key: org.key })).status).toBe(200);
    const late = await call(`${app.url}/v1/events/batch`, { key: org.key, body, headers });
    expect(late.body.ledger).toEqual(receipts);
  });

  test('organizations have separate logs; unknown sizes and events are 404', async () => {
    const [a, b] = [await app.org(), await app.org()];
    const created = await call(`${app.url}/v1/events`, { key: a.key, body: eventBody() });
    expect((await call(`${app.url}/v1/ledger/checkpoint`, { key: b.key })).body.code).toBe('CHECKPOINT_NOT_FOUND');
    expect((await call(`${app.url}/v1/events/${created.body.event.id}/proof`, { key: b.key })).status).toBe(404);
    expect((await call(`${app.url}/v1/events/${created.body.event.id}/proof?tree_size=7`, { key: a.key })).body.code).toBe('CHECKPOINT_NOT_FOUND');
    const proof = await call(`${app.url}/v1/events/${created.body.event.id}/proof`, { key: a.key });
    expect((await verifiedCheckpoint(app.url, a, proof.body.checkpoint)).origin).toBe(`ledger.test/${a.id}`);
    const tooFar = await call(`${app.url}/v1/ledger/consistency?from=5`, { key: a.key });
    expect({ status: tooFar.status, body: tooFar.body }).toEqual({
      status: 400,
      body: { code: 'VALIDATION_FAILED', message: expect.stringMatching(/^Invalid request: from must be at most [1-4], the size of the tree it is proven consistent with$/), fields: ['from'] },
    });
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
    const heads = app.collections.ledgerHeads;
    expect(await heads.findOne({ _id: org.id })).toEqual({ _id: org.id, size: 2 });
    expect(await newest()).toBe(2);

    // A crash between storing checkpoint 2 and raising the head: it still names 1, and the API says 1.
    await heads.updateOne({ _id: org.id }, { $set: { size: 1 } });
    expect(await newest()).toBe(1);
    // The next round raises it past the checkpoint it missed.
    expect(await proofOfNew()).toBe(3);
    expect(await newest()).toBe(3);

    // A raise lost to a concurrent one (FerretDB): no new event, yet a proof of the newest one, which
    // no checkpoint the head names covers, has the round put the head right.
    const [third] = (await call(`${app.url}/v1/events?limit=1`, { key: org.key })).body.data;
    await heads.updateOne({ _id: org.id }, { $set: { size: 2 } });
    expect((await call(`${app.url}/v1/events/${third.id}/proof`, { key: org.key })).body.tree_size).toBe(3);
    expect(await heads.findOne({ _id: org.id })).toEqual({ _id: org.id, size: 3 });

    // No head at all (deleted behind the service's back): a proof of the newest event has it put back.
    await heads.deleteOne({ _id: org.id });
    expect((await call(`${app.url}/v1/events/${third.id}/proof`, { key: org.key })).body.tree_size).toBe(3);
    expect(await heads.findOne({ _id: org.id })).toEqual({ _id: org.id, size: 3 });
    expect(await newest()).toBe(3);
  });

  test('a tile\'s partial versions are deleted once it is full; older trees are then proven from its prefix', async () => {
    const org = await app.org();
    const deletes: Document[] = [];
    // This organization's deletions only: the command names its tenant, whichever round sent it.
    const watch = (event: CommandStartedEvent) => {
      if (event.commandName === 'delete' && event.command.delete === 'ledger_tiles') deletes.push(...(event.command.deletes as { q: Document }[]).map((d) => d.q).filter((q) => q.tenant === org.id));
    };
    app.client.on('commandStarted', watch);
    // Three checkpoints, 100 events apart: tile 0 of level 0 is partial at 100 and 200, full at 300.
    const ids: string[] = [];
    const sizes: number[] = [];
    for (let round = 0; round < 3; round++) {
      const batch = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: 100 }, () => eventBody()) } });
      ids.push(...batch.body.events.map((e: { id: string }) => e.id));
      sizes.push((await call(`${app.url}/v1/events/${ids[ids.length - 1]}/proof`, { key: org.key })).body.tree_size);
    }
    app.client.off('commandStarted', watch);
    expect(sizes).toEqual([100, 200, 300]);
    const versions = await app.collections.ledgerTiles.find({ tenant: org.id }, { projection: { _id: 1 } }).toArray();
    expect(versions.map((v) => v._id).sort()).toEqual([`${org.id}/0/0/256`, `${org.id}/0/1/044`, `${org.id}/1/0/001`]);
    // The deletion names the tile (an index serves it on MongoDB: the query-shape check).
    expect(deletes).toEqual([{ tenant: org.id, tile: `${org.id}/0/0`, width: { $lt: 256 } }]);
    expect(deletes.map((q) => queryShapeProblem({ collection: 'ledger_tiles', command: 'delete', filter: q, sort: [] }))).toEqual([null]);

    // Proofs in the trees whose partial tiles are gone, and consistency from them, still verify.
    const first = await verifiedCheckpoint(app.url, org, (await call(`${app.url}/v1/events/${ids[0]}/proof?tree_size=100`, { key: org.key })).body.checkpoint);
    for (const [size, index] of [[100, 0], [100, 99], [200, 150]] as const) {
      const res = await call(`${app.url}/v1/events/${ids[index]}/proof?tree_size=${size}`, { key: org.key });
      expect(res.status).toBe(200);
      const checkpoint = await verifiedCheckpoint(app.url, org, res.body.checkpoint);
      expect(verifyInclusion(index, size, leafHash(b64(res.body.leaf)), res.body.inclusion_path.map(b64), checkpoint.root)).toBe(true);
    }
    const consistency = await call(`${app.url}/v1/ledger/consistency?from=100&to=300`, { key: org.key });
    const last = await verifiedCheckpoint(app.url, org, consistency.body.checkpoint);
    expect(verifyConsistency(100, 300, consistency.body.proof.map(b64), first.root, last.root)).toBe(true);
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
    const all = await app.collections.ledgerCheckpoints.find({ tenant: org.id }).sort({ size: -1 }).toArray();
    expect(all.length).toBeGreaterThan(0);
    for (const checkpoint of all) {
      const res = await call(`${two.url}/v1/ledger/consistency?from=${checkpoint.size}&to=${newest.size}`, { key: org.key });
      expect(verifyConsistency(checkpoint.size, newest.size, res.body.proof.map(b64), b64(checkpoint.root), newest.root)).toBe(true);
    }
  });
});

describe('one round for every organization due', () => {
  let app: TestApp;
  beforeAll(async () => {
    // No cadence: the test runs the round itself.
    app = await startTestApp({ label: 'ledger-round', ledgerIntervalMs: 3_600_000 });
  });
  afterAll(() => app.close());

  test('twelve organizations are integrated in one round, with one write per collection; one organization\'s failure stays its own', async () => {
    const orgs = await Promise.all(Array.from({ length: 12 }, () => app.org()));
    for (const [i, org] of orgs.entries()) {
      for (let n = 0; n <= i; n++) expect((await call(`${app.url}/v1/events`, { key: org.key, body: eventBody() })).status).toBe(201);
    }
    // The last organization's checkpoint of its size is taken already, by a document this key did not sign.
    const victim = orgs[11] as TestOrg;
    await app.collections.ledgerCheckpoints.insertOne({ _id: `${victim.id}/12`, tenant: victim.id, size: 12, root: Buffer.alloc(32).toString('base64'), note: 'planted\n\n— x AAAA\n', created_at: new Date() });

    // The round's own commands (TestApp.marked), not those the background jobs send meanwhile.
    await app.marked('round', () => app.services.integrator.integrate((orgs[0] as TestOrg).id));
    const writes = app.commandsOf('round').filter((event) => ['insert', 'update', 'delete'].includes(event.commandName)).map((event) => {
      const items = (event.command.documents ?? event.command.updates ?? event.command.deletes ?? []) as Document[];
      return { collection: String(event.command[event.commandName]), command: event.commandName, items: items.length };
    });

    for (const [i, org] of orgs.slice(0, 11).entries()) {
      expect((await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body.tree_size).toBe(i + 1);
    }
    expect(app.services.integrator.haltedReason(victim.id)).toContain('not one this installation\'s key signed');
    const ledgerWrites = writes.filter((w) => w.collection.startsWith('ledger_'));
    // The eleven organizations' writes, then the installation log's: their eleven checkpoints appended as
    // entries by one insert, and one checkpoint of the installation log covering them all.
    const insert = (collection: string, items: number) => ({ collection, command: 'insert', items });
    expect(ledgerWrites.filter((w) => w.collection === 'ledger_tiles' && w.command === 'insert')).toEqual([insert('ledger_tiles', 11), insert('ledger_tiles', 1)]);
    expect(ledgerWrites.filter((w) => w.collection === 'ledger_checkpoints')).toEqual([insert('ledger_checkpoints', 11), insert('ledger_checkpoints', 1)]);
    expect(ledgerWrites.filter((w) => w.collection === 'ledger_entries')).toEqual([insert('ledger_entries', 11)]);
    // Their first heads: one insert (later rounds raise heads by updates, 16 to a command: FerretDB, docs/operations.md).
    expect(ledgerWrites.filter((w) => w.collection === 'ledger_heads')).toEqual([insert('ledger_heads', 11), insert('ledger_heads', 1)]);
  });
});

describe('a round signs at most its budget of logs, the longest unsigned and the asked-for first', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ label: 'ledger-budget', ledgerIntervalMs: 3_600_000, ledgerLogsPerRound: 4 });
  });
  afterAll(() => app.close());

  test('ten organizations, a budget of four: the one asked for and three others in the first round, all within three rounds', async () => {
    const orgs = await Promise.all(Array.from({ length: 10 }, () => app.org()));
    for (const org of orgs) expect((await call(`${app.url}/v1/events`, { key: org.key, body: eventBody() })).status).toBe(201);
    const signed = async () => {
      const sizes = await Promise.all(orgs.map(async (org) => (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).status === 200));
      return sizes.filter(Boolean).length;
    };
    const last = orgs[9] as TestOrg;
    await app.services.integrator.integrate(last.id);
    expect(await signed()).toBe(4);
    expect((await call(`${app.url}/v1/ledger/checkpoint`, { key: last.key })).status).toBe(200);
    await app.services.integrator.integrate(last.id);
    expect(await signed()).toBe(7);
    await app.services.integrator.integrate(last.id);
    expect(await signed()).toBe(10);
  });
});
