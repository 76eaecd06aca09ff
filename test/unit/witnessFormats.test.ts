/**
 * The witness formats without a server: tlog-policy parsing and quorums, tlog-witness request bodies,
 * tlog-tiles paths and entry bundles, cosignature/v1 signing and checking, and the witness's own
 * answers for every status of c2sp.org/tlog-witness v1.0.0. Interoperability with Go's implementations
 * is `test/ledger/goInterop.test.ts`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cosign, cosignerFromSeed, cosignerKeyFileText, parseCosignerKeyFile, verifyCosignature } from '../../src/domain/ledger/cosigner';
import { checkpointText } from '../../src/domain/ledger/formats';
import { consistencyProof, leafHash, nodesOf, rootHash } from '../../src/domain/ledger/merkle';
import { signNote, signerFromSeed } from '../../src/domain/ledger/note';
import { entryBundle, parseEntryBundle, parseTilePath, tileIndexPath } from '../../src/domain/ledger/tilePaths';
import { addCheckpointBody, checkpointBody, parseAddCheckpointBody, parsePolicy, parseSignatureLines, quorumMet, splitNote } from '../../src/domain/ledger/witnessFormats';
import { Witness } from '../../src/witness/witness';

const key = (name: string) => cosignerFromSeed(name, randomBytes(32)).text;

describe('tlog-policy', () => {
  const [a, b, c] = [key('w.example/a'), key('w.example/b'), key('w.example/c')];
  test('groups, thresholds and the quorum', () => {
    const policy = parsePolicy(`# comment\nlog ${signerFromSeed('log.example', randomBytes(32)).text}\n\nwitness A ${a} https://a.example\nwitness B ${b}\n  witness\tC ${c}\ngroup AB 2 A B\ngroup any1 any AB C\nquorum any1\n`);
    expect(policy.witnesses.map((w) => [w.name, w.url])).toEqual([['A', 'https://a.example'], ['B', null], ['C', null]]);
    expect(quorumMet(policy, new Set(['A']))).toBe(false);
    expect(quorumMet(policy, new Set(['A', 'B']))).toBe(true);
    expect(quorumMet(policy, new Set(['C']))).toBe(true);
    expect(quorumMet(parsePolicy('quorum none\n'), new Set())).toBe(true);
    expect(quorumMet(parsePolicy(`witness A ${a}\nwitness B ${b}\ngroup g all A B\nquorum g\n`), new Set(['A']))).toBe(false);
  });
  test.each([
    ['no quorum', `witness A ${a}\n`, 'no quorum line'],
    ['two quorums', `witness A ${a}\nquorum A\nquorum A\n`, 'exactly one quorum'],
    ['a name defined twice', `witness A ${a}\nwitness A ${b}\nquorum A\n`, 'defined twice'],
    ['a key listed twice', `witness A ${a}\nwitness B ${a}\nquorum A\n`, 'the key of another witness'],
    ['a forward reference', `group g any A\nwitness A ${a}\nquorum g\n`, 'not defined on a line before'],
    ['a threshold above the members', `witness A ${a}\ngroup g 2 A\nquorum g\n`, 'threshold'],
    ['a log key as a witness key', `witness A ${signerFromSeed('x', randomBytes(32)).text}\nquorum A\n`, 'type 0x04'],
    ['an unknown keyword', 'quorum none\nwitnesses A\n', 'unknown keyword'],
    ['a control character', 'quorum none\r\n', 'control characters'],
  ])('refuses %s', (_, text, message) => {
    expect(() => parsePolicy(text)).toThrow(message);
  });
});

test('tlog-tiles paths and entry bundles', () => {
  expect(tileIndexPath(1234067)).toBe('x001/x234/067');
  expect(tileIndexPath(5)).toBe('005');
  expect(parseTilePath('0/x001/x234/067')).toEqual({ level: 0, index: 1234067, width: 256 });
  expect(parseTilePath('entries/000.p/5')).toEqual({ level: 'entries', index: 0, width: 5 });
  expect(parseTilePath('2/x001/002.p/255')).toEqual({ level: 2, index: 1002, width: 255 });
  for (const bad of ['0/1', '0/0001', '01/000', '0/001/002', '0/000.p/0', '0/000.p/256', '0/000.p/05', 'x/000', '64/000', '0/x000', '0/']) expect(parseTilePath(bad)).toBeNull();
  expect(entryBundle([Buffer.from('ab'), Buffer.alloc(0)]).toString('hex')).toBe('000261620000');
  expect(parseEntryBundle(entryBundle([Buffer.from('ab'), Buffer.alloc(0), Buffer.from('xyz')])).map((e) => e.toString())).toEqual(['ab', '', 'xyz']);
});

test('the add-checkpoint body round-trips, and malformed ones are refused', () => {
  const note = signNote('o\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n', signerFromSeed('o', randomBytes(32)));
  const proof = [randomBytes(32), randomBytes(32)];
  const parsed = parseAddCheckpointBody(addCheckpointBody(7, proof, note));
  expect(parsed.oldSize).toBe(7);
  expect(parsed.proof.map((p) => Buffer.from(p).toString('hex'))).toEqual(proof.map((p) => p.toString('hex')));
  expect(parsed.note).toBe(note);
  for (const bad of [`old 07\n\n${note}`, `old 1\nnot-base64\n\n${note}`, 'old 1\n', `old 1\n${'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n'.repeat(64)}\n${note}`]) {
    expect(() => parseAddCheckpointBody(bad)).toThrow();
  }
});

test('cosignature/v1: signed over the checkpoint body with its timestamp; another body, key or time fails', () => {
  const seed = randomBytes(32);
  const witness = parseCosignerKeyFile(cosignerKeyFileText('witness.example/w', seed));
  const body = 'log.example/installation\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n';
  const [line] = parseSignatureLines(cosign(body, witness, 1_700_000_000));
  if (!line) throw new Error('no line');
  expect(verifyCosignature(body, line, witness)).toBe(1_700_000_000);
  expect(verifyCosignature(body.replace('\n3\n', '\n4\n'), line, witness)).toBeNull();
  expect(verifyCosignature(body, line, cosignerFromSeed('witness.example/w', randomBytes(32)))).toBeNull();
  const tampered = Buffer.from(line.signature);
  tampered.writeUInt8(tampered.readUInt8(7) ^ 1, 7);
  expect(verifyCosignature(body, { ...line, signature: tampered }, witness)).toBeNull();
  expect(checkpointBody(`${body}\n— x AAAA\n`)).toBe(body);
});

describe('the witness answers every status of tlog-witness v1.0.0', () => {
  const log = signerFromSeed('log.example', randomBytes(32));
  const origin = 'log.example/installation';
  const leaves = Array.from({ length: 9 }, (_, i) => leafHash(`entry ${i}`));
  const noteOf = async (size: number, signer = log, leavesOf = leaves) => signNote(checkpointText({ origin, size, root: await rootHash(nodesOf(leavesOf), size) }), signer);
  let dir: string;
  let witness: Witness;
  let statePath: string;
  const cosigner = cosignerFromSeed('witness.example/w', randomBytes(32));
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'witness-unit-'));
    statePath = join(dir, 'state.json');
    witness = new Witness(cosigner, [{ origin, verifier: log }], statePath, () => 1_700_000_000);
  });
  afterAll(() => { rmSync(dir, { recursive: true, force: true }); });

  test('in order: first sight, growth with a proof, conflicts, bad proofs, strangers', async () => {
    const submit = (body: string) => witness.addCheckpoint(body);
    // First sight (old 0, no proof): cosigned, and the state is on disk before the answer.
    const first = await submit(addCheckpointBody(0, [], await noteOf(4)));
    expect(first.status).toBe(200);
    const [line] = parseSignatureLines(first.body);
    expect(line && verifyCosignature(splitNote(await noteOf(4)).text, line, cosigner)).toBe(1_700_000_000);
    expect(JSON.parse(readFileSync(statePath, 'utf8')).logs[origin].size).toBe(4);
    // Old size other than what it holds: 409 with its size.
    const conflict = await submit(addCheckpointBody(2, [], await noteOf(6)));
    expect(conflict).toEqual({ status: 409, contentType: 'text/x.tlog.size', body: '4\n' });
    // A consistency proof that fails: 422.
    expect((await submit(addCheckpointBody(4, [randomBytes(32)], await noteOf(6)))).status).toBe(422);
    // A real one: 200.
    const proof = await consistencyProof(nodesOf(leaves), 4, 6);
    expect((await submit(addCheckpointBody(4, proof, await noteOf(6)))).status).toBe(200);
    // Same size, another root: 409 (v1.0.0).
    const other = leaves.map((l, i) => (i === 0 ? leafHash('forged') : l));
    expect((await submit(addCheckpointBody(6, [], await noteOf(6, log, other)))).status).toBe(409);
    // Old size above the checkpoint's: 400. Unknown origin: 404. Not the log's key: 403. Garbage: 400.
    expect((await submit(addCheckpointBody(7, [], await noteOf(6)))).status).toBe(400);
    expect((await submit(addCheckpointBody(0, [], signNote('other.example\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n', log)))).status).toBe(404);
    expect((await submit(addCheckpointBody(6, [], await noteOf(8, signerFromSeed('log.example', randomBytes(32)))))).status).toBe(403);
    expect((await submit('hello')).status).toBe(400);
    // A restart reads its state back: it still holds 6.
    const again = new Witness(cosigner, [{ origin, verifier: log }], statePath);
    expect((await again.addCheckpoint(addCheckpointBody(0, [], await noteOf(8)))).body).toBe('6\n');
  });
});
