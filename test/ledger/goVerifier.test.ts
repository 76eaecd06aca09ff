/**
 * An independent implementation accepts the ledger: the Go program in verifier/ (Go's signed-note
 * verifier, transparency-dev's checkpoint parser and RFC 6962 proof verification, gowebpki's RFC 8785
 * canonicalizer) checks the running test server's checkpoint against a pinned key, recomputes each
 * event's hash from its JSON, checks inclusion and consistency proofs, and fails when the log is
 * tampered with, the key is not the pinned one, or an event is served other than it was signed. It checks
 * producer signatures too, with code of its own: the bindings from the log's binding entries (listed by
 * their action, however few events it fetches, and proven) and from -producer pins, each bound key's
 * events against its producer key, exempting exactly the service's self-audit actions. Its Go unit tests
 * (reading an event's JSON by exact keys) run here too.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Binary } from 'mongodb';
import { signerFromSeed } from '../../src/domain/ledger/note';
import { contentOf } from '../../src/domain/eventFields';
import { SELF_AUDIT_ACTIONS } from '../../src/domain/selfAudit';
import { call, eventBody } from '../helpers/api';
import { goProgram } from '../helpers/goPrograms';
import { producerSigner, signedBody, storedPastTheDoor } from '../helpers/producer';
import { seedEvents } from '../helpers/seed';
import { listenOnFreePort, startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from '../helpers/harness';

const run = promisify(execFile);
let app: TestApp;
let dir: string;
let binary: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'goverifier-'));
  // Built once per source tree (globalSetup; here only if that build failed).
  binary = await goProgram('verifier');
  app = await startTestApp({ label: 'goverifier' });
}, 660_000);
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await app.close();
});

async function verify(org: TestOrg, ...args: string[]): Promise<{ code: number; stdout: string }> {
  return verifyAt(app.url, org, '-vkey', TEST_LEDGER_SIGNER.text, ...args);
}

async function verifyAt(url: string, org: TestOrg, ...args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(binary, ['-url', url, '-key', org.key, ...args]);
    return { code: 0, stdout };
  } catch (error) {
    const failure = error as { code: number; stdout: string };
    return { code: failure.code, stdout: failure.stdout };
  }
}

/** Writes events and waits until a checkpoint includes them (a proof of the newest one waits for it). */
async function write(org: TestOrg, count: number): Promise<void> {
  const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: count }, (_, i) => eventBody({ actor: { id: `go${i}` } })) } });
  const newest = res.body.events[count - 1] as { id: string };
  expect((await call(`${app.url}/v1/events/${newest.id}/proof`, { key: org.key })).status).toBe(200);
}

test('the Go verifier accepts the key, the checkpoint, every inclusion proof and the consistency proof', async () => {
  const org = await app.org();
  await write(org, 300);
  const saved = join(dir, 'first.checkpoint');
  const first = await verify(org, '-events', '60', '-save', saved);
  expect(first.stdout).not.toContain('FAIL');
  expect(first.code).toBe(0);
  expect(first.stdout.match(/^ok {4}event .* is sequence number \d+ of the signed tree of 300$/gm)).toHaveLength(60);

  await write(org, 45);
  const second = await verify(org, '-events', '10', '-old', saved);
  expect(second.code).toBe(0);
  expect(second.stdout).toContain('ok    the tree of 345 is an extension of the saved tree of 300');

  // A checkpoint altered after signing is refused.
  const forged = join(dir, 'forged.checkpoint');
  writeFileSync(forged, readFileSync(saved, 'utf8').replace('\n300\n', '\n299\n'));
  expect((await verify(org, '-events', '1', '-old', forged)).code).toBe(1);
});

test('v1 and v2 leaves in one log: events from before salts were stored, then new ones, all verify', async () => {
  const org = await app.org();
  // Stored without salts (as every event was before v2 leaves), sealed by the operator: v1 leaves.
  await seedEvents(app, org, 20);
  await app.services.integrator.reseal(org.id);
  await write(org, 15);
  const leaves = await app.collections.events.find({ tenant: org.id }).toArray();
  expect(leaves.filter((doc) => doc.salt === undefined)).toHaveLength(20);
  const result = await verify(org, '-events', '35');
  expect(result.stdout).not.toContain('FAIL');
  expect(result.code).toBe(0);
  expect(result.stdout.match(/^ok {4}event .*: the SHA-256 of its canonical JSON, computed here, is the one its v1 leaf commits to$/gm)).toHaveLength(20);
  expect(result.stdout.match(/^ok {4}event .*: its salted commitment, computed here from its canonical JSON and salt, is the one its v2 leaf commits to$/gm)).toHaveLength(15);
  expect(result.stdout.match(/^ok {4}event .* is sequence number \d+ of the signed tree of 35$/gm)).toHaveLength(35);
});

test('a tile changed in the database makes the proofs fail', async () => {
  const org = await app.org();
  await write(org, 20);
  const tiles = app.collections.ledgerTiles;
  const id = `${org.id}/0/0/020`;
  const tile = await tiles.findOne({ _id: id });
  if (!tile) throw new Error('no tile');
  const bytes = Buffer.from(tile.hashes.buffer);
  bytes[40] = (bytes[40] ?? 0) ^ 0xff;
  await tiles.updateOne({ _id: id }, { $set: { hashes: new Binary(bytes) } });
  const result = await verify(org, '-events', '20');
  expect(result.code).toBe(1);
  expect(result.stdout).toMatch(/^FAIL {2}event .* is sequence number/m);
});

test('the key is pinned: a server whose key is not the pinned one fails', async () => {
  const org = await app.org();
  await write(org, 5);
  // The same name, another key: what a server with a replaced key would present.
  const other = signerFromSeed(TEST_LEDGER_SIGNER.name, Buffer.alloc(32, 9)).text;
  const result = await verifyAt(app.url, org, '-vkey', other, '-events', '5');
  expect(result.code).toBe(1);
  expect(result.stdout).toContain(`FAIL  the server's key is the pinned key ${other}`);
});

test('an event served other than it was signed fails: its hash is recomputed from its JSON, not taken from the server', async () => {
  const org = await app.org();
  await write(org, 10);
  // Between the verifier and the server: the event list's first event loses a field's true value;
  // the proofs (and the event_sha256 they name) and the list of binding entries (none here) pass
  // through untouched.
  const { server, url } = await listenOnFreePort((req, res) => {
    void (async () => {
      const upstream = await fetch(`${app.url}${req.url ?? '/'}`, { headers: { authorization: req.headers.authorization ?? '' } });
      let text = await upstream.text();
      if ((req.url ?? '').startsWith('/v1/events?') && !(req.url ?? '').includes('action=')) {
        const page = JSON.parse(text) as { data: { actor_name: string | null }[] };
        (page.data[0] as { actor_name: string | null }).actor_name = 'Someone Else';
        text = JSON.stringify(page);
      }
      res.writeHead(upstream.status, { 'content-type': 'application/json' });
      res.end(text);
    })();
  });
  try {
    const result = await verifyAt(url, org, '-vkey', TEST_LEDGER_SIGNER.text, '-events', '10');
    expect(result.code).toBe(1);
    expect(result.stdout.match(/^FAIL {2}event .*: its salted commitment, computed here from its canonical JSON and salt, is the one its v2 leaf commits to$/gm)).toHaveLength(1);
    expect(result.stdout.match(/^ok {4}event .*: its salted commitment, computed here/gm)).toHaveLength(9);
  } finally {
    server.close();
  }
});

describe('producer signatures', () => {
  const bind = (org: TestOrg, producerKey: string) => call(`${app.url}/v1/producer-key`, { key: org.key, method: 'PUT', body: { producer_key: producerKey } });

  /** Waits until a checkpoint includes the event (a proof of it waits for one). */
  async function proven(org: TestOrg, id: string): Promise<void> {
    expect((await call(`${app.url}/v1/events/${id}/proof`, { key: org.key })).status).toBe(200);
  }

  /** Signed events of `org`'s bound key, posted, and included in a checkpoint. */
  async function writeSigned(org: TestOrg, producer: ReturnType<typeof producerSigner>, count: number): Promise<string[]> {
    // Metadata whose canonical form differs from its JSON text: key order, numbers, escapes, non-ASCII.
    const events = Array.from({ length: count }, (_, i) => signedBody(eventBody({ actor: { id: `signed${i}` }, metadata: { z: 1e21, b: [1.5, 'é', '<&>\u2028'], a: { y: null, x: -0 } } }), org.id, producer));
    const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events } });
    expect(res.status).toBe(201);
    const ids = (res.body.events as { id: string }[]).map((event) => event.id);
    await proven(org, ids[count - 1] as string);
    return ids;
  }

  /** Stores a content through the service's own write path, past its door (what code holding its key could run). */
  async function writeOwn(org: TestOrg, content: ReturnType<typeof contentOf>): Promise<string> {
    const id = await storedPastTheDoor(app, org.id, org.keyId, content);
    await proven(org, id);
    return id;
  }

  test('a bound key\'s signed events verify; an unsigned one the service\'s own write path stored fails, named; a pin the log contradicts fails', async () => {
    const org = await app.org();
    const producer = producerSigner();
    expect((await bind(org, producer.text)).status).toBe(200);
    const ids = await writeSigned(org, producer, 4);

    const result = await verify(org, '-events', '50');
    expect(result.stdout).not.toContain('FAIL');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^ok {4}binding entry \\S+ binds API key ${org.keyId} to producer key ${literally(producer.text)}$`, 'm'));
    for (const id of ids) expect(result.stdout).toContain(`ok    event ${id}: its producer signature, over its content canonicalized here, verifies with producer key ${producer.text} bound to API key ${org.keyId}`);
    expect(result.stdout).toContain('ok    producer signatures: 4 of 4 event(s) of 1 bound API key(s) carry a valid signature by the bound producer key, verified here');

    // The binding entry older than the events fetched: listed from the log by its action, proven, and used.
    const partial = await verify(org, '-events', '4');
    expect(partial.stdout).not.toContain('FAIL');
    expect(partial.code).toBe(0);
    expect(partial.stdout).toMatch(/^ok {4}binding entry \S+ is sequence number \d+ of the signed tree of \d+$/m);
    expect(partial.stdout).toContain('ok    1 of 1 binding entries of the organization (action audit_ledger.key.producer_bound, api_key_id audit_ledger) proven in the signed tree of');
    expect(partial.stdout).toContain('ok    producer signatures: 4 of 4 event(s) of 1 bound API key(s)');
    expect(partial.stdout).not.toContain('skip');
    const pinned = await verify(org, '-events', '4', '-producer', `${org.keyId}=${producer.text}`);
    expect(pinned.code).toBe(0);
    expect(pinned.stdout).toContain('ok    producer signatures: 4 of 4 event(s) of 1 bound API key(s)');
    const agreeing = await verify(org, '-events', '50', '-producer', `${org.keyId}=${producer.text}`);
    expect(agreeing.code).toBe(0);
    expect(agreeing.stdout).toMatch(new RegExp(`^ok {4}binding entry \\S+ binds API key ${org.keyId} to producer key ${literally(producer.text)}, as -producer does$`, 'm'));

    // A pin the log's binding contradicts.
    const other = producerSigner('other.test');
    const contradicted = await verify(org, '-events', '50', '-producer', `${org.keyId}=${other.text}`);
    expect(contradicted.code).toBe(1);
    expect(contradicted.stdout).toMatch(new RegExp(`^FAIL {2}binding entry \\S+ binds API key ${org.keyId} to producer key ${literally(producer.text)}, but -producer binds it to ${literally(other.text)}$`, 'm'));

    // An unsigned event of the bound key, stored by the service's own write path and signed into the log.
    const forged = await writeOwn(org, contentOf(eventBody({ actor: { id: 'forged' }, action: 'payout.approved' }), org.id));
    const named = await verify(org, '-events', '50');
    expect(named.code).toBe(1);
    expect(named.stdout).toContain(`ok    event ${forged} is sequence number`);
    expect(named.stdout).toContain(`FAIL  event ${forged} of API key ${org.keyId}, bound to producer key ${producer.text}, carries no producer signature`);
    expect(named.stdout).toContain('FAIL  producer signatures: 4 of 5 event(s) of 1 bound API key(s)');
    expect(named.stdout.match(/^FAIL/gm)).toHaveLength(2);
  });

  test('an event of a bound key signed by another producer key fails, named', async () => {
    const org = await app.org();
    const producer = producerSigner();
    expect((await bind(org, producer.text)).status).toBe(200);
    await writeSigned(org, producer, 2);
    // A valid signature of exactly this content, by a key the log does not bind to the API key.
    const other = producerSigner('other.test');
    const at = new Date();
    const body = signedBody(eventBody({ actor: { id: 'impostor' }, timestamp: at.toISOString() }), org.id, other);
    const forged = await writeOwn(org, { ...contentOf(body, org.id), ts: at });
    const result = await verify(org, '-events', '50');
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`FAIL  event ${forged}: its producer signature, over its content canonicalized here, verifies with producer key ${producer.text} bound to API key ${org.keyId}`);
    expect(result.stdout).toContain('FAIL  producer signatures: 2 of 3 event(s) of 1 bound API key(s)');
    // Pinned to the impostor's key, the log's binding still disagrees, and the true events fail instead.
    const pinned = await verify(org, '-events', '50', '-producer', `${org.keyId}=${other.text}`);
    expect(pinned.code).toBe(1);
    expect(pinned.stdout).toContain('FAIL  producer signatures: 1 of 3 event(s) of 1 bound API key(s)');
  });

  test('bindings come from the log, not the events fetched: an unsigned event of a bound key fails with -events 1; only the exact self-audit actions are exempt', async () => {
    const org = await app.org();
    const producer = producerSigner();
    expect((await bind(org, producer.text)).status).toBe(200);
    await writeSigned(org, producer, 3);

    // One of the service's own actions, recorded under the key that acted (as a stream it creates is): exempt.
    const own = await writeOwn(org, contentOf(eventBody({ actor: { id: 'service' }, action: 'audit_ledger.stream.created' }), org.id));
    const exempt = await verify(org, '-events', '1');
    expect(exempt.stdout).not.toContain('FAIL');
    expect(exempt.code).toBe(0);
    expect(exempt.stdout).toContain(`ok    event ${own} is sequence number`);
    expect(exempt.stdout).toContain('ok    1 of 1 binding entries of the organization');
    expect(exempt.stdout).toContain('ok    producer signatures: 0 of 0 event(s) of 1 bound API key(s)');

    // The binding entry far out of the window: the unsigned event still fails (it passed unseen before).
    const unsigned = await writeOwn(org, contentOf(eventBody({ actor: { id: 'forged' }, action: 'payout.approved' }), org.id));
    const result = await verify(org, '-events', '1');
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`ok    event ${unsigned} is sequence number`);
    expect(result.stdout).toContain(`FAIL  event ${unsigned} of API key ${org.keyId}, bound to producer key ${producer.text}, carries no producer signature`);
    expect(result.stdout).toContain('FAIL  producer signatures: 0 of 1 event(s) of 1 bound API key(s)');

    // In the service's namespace but not one of its actions (no client may send one): a forgery, checked.
    const namespaced = await writeOwn(org, contentOf(eventBody({ actor: { id: 'forged' }, action: 'Audit_Ledger.invoice.refunded' }), org.id));
    const spoofed = await verify(org, '-events', '1');
    expect(spoofed.code).toBe(1);
    expect(spoofed.stdout).toContain(`FAIL  event ${namespaced} of API key ${org.keyId}, bound to producer key ${producer.text}, carries no producer signature`);
    expect(spoofed.stdout.match(/^FAIL/gm)).toHaveLength(2);
  });

  test('the Go verifier exempts exactly the actions of SELF_AUDIT_ACTIONS (src/domain/selfAudit.ts)', () => {
    const source = readFileSync(join(__dirname, '..', '..', 'verifier', 'producer.go'), 'utf8');
    const block = /^var selfAuditActions = map\[string\]bool\{\n([^}]*)\}$/m.exec(source)?.[1];
    if (block === undefined) throw new Error('verifier/producer.go declares no `var selfAuditActions = map[string]bool{…}`');
    const lines = block.split('\n').filter((line) => line.trim() !== '');
    expect(lines.filter((line) => !/^\t"[^"]+":\s+true,$/.test(line))).toEqual([]);
    expect(lines.map((line) => /"([^"]+)"/.exec(line)?.[1]).sort()).toEqual(Object.keys(SELF_AUDIT_ACTIONS).sort());
  });

  test('the Go verifier\'s unit tests pass (go test ./... in verifier/)', async () => {
    try {
      const { stdout } = await run('go', ['test', './...'], { cwd: join(__dirname, '..', '..', 'verifier'), timeout: 600_000 });
      expect(stdout).toMatch(/^ok\s+auditledger\/verifier\s/m);
    } catch (error) {
      const failure = error as { stdout?: string; stderr?: string };
      if (failure.stdout === undefined) throw error;
      throw new Error(`go test ./... failed:\n${failure.stdout}${failure.stderr ?? ''}`, { cause: error });
    }
  }, 660_000);

  test('a signed event of a key bound nowhere: not checked in part of the log, a failure when every leaf is proven', async () => {
    const org = await app.org();
    await write(org, 3);
    const signer = producerSigner();
    const at = new Date();
    const body = signedBody(eventBody({ actor: { id: 'unbound' }, timestamp: at.toISOString() }), org.id, signer);
    const forged = await writeOwn(org, { ...contentOf(body, org.id), ts: at });
    const part = await verify(org, '-events', '2');
    expect(part.code).toBe(0);
    expect(part.stdout).toContain(`skip  producer signature: 1 signed event(s) of API key ${org.keyId} not checked`);
    const whole = await verify(org, '-events', '100');
    expect(whole.code).toBe(1);
    expect(whole.stdout).toContain(`FAIL  producer signature: 1 event(s) of API key ${org.keyId} carry a producer signature, but no binding entry of the log (every leaf of which was proven here) binds a producer key to it: ${forged}`);
  });
});

/** `text` as a regular expression matching itself. */
function literally(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
