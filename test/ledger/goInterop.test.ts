/**
 * The witnessed ledger with code nobody here wrote, built from the Go module proxy at the versions
 * verifier/go.mod pins: transparency-dev's witness library (verifier/cmd/testwitness: witness.New with
 * in-memory persistence, a cosignature/v1 signer, its add-checkpoint handler) cosigns the installation
 * log beside our own `witness serve`; the Go verifier checks both witnesses' cosignatures with
 * transparency-dev's `formats/note` cosignature/v1 verifier and reads both logs through the tlog-tiles
 * API with Tessera's fsck; `verify --policy` accepts the transparency-dev witness's cosignatures; and a
 * wiped database restarted under the same key is refused by it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Binary } from 'mongodb';
import { cosignerKeyFileText, parseCosignerKeyFile } from '../../src/domain/ledger/cosigner';
import { parsePolicy } from '../../src/domain/ledger/witnessFormats';
import { INSTALLATION } from '../../src/domain/ledger/log';
import { call, eventBody, eventually } from '../helpers/api';
import { goProgram } from '../helpers/goPrograms';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from '../helpers/harness';
import { runCli, startWitnessProcess, type WitnessProcess } from '../helpers/processes';

const run = promisify(execFile);
const INSTALLATION_ORIGIN = `${TEST_LEDGER_SIGNER.name}/installation`;
let dir: string;
let verifierBinary: string;
let witnessBinary: string;

interface GoWitness {
  url: string;
  vkey: string;
  child: ChildProcess;
}

/** transparency-dev's witness, following only our installation log. */
async function startGoWitness(name: string): Promise<GoWitness> {
  const keyFile = join(dir, `${name.replace(/\W/g, '_')}.key`);
  const keyText = cosignerKeyFileText(name, randomBytes(32));
  writeFileSync(keyFile, `${keyText}\n`, { mode: 0o600 });
  const child = spawn(witnessBinary, ['-key', keyFile, '-origin', INSTALLATION_ORIGIN, '-log-vkey', TEST_LEDGER_SIGNER.text, '-listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => { reject(new Error('the Go witness did not start')); }, 30_000);
    child.once('exit', (code) => { reject(new Error(`the Go witness exited with ${code}`)); });
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /Listening on (http:\/\/\S+)\/add-checkpoint/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    });
  });
  return { url, vkey: parseCosignerKeyFile(keyText).text, child };
}

async function stopGoWitness(witness: GoWitness): Promise<void> {
  if (witness.child.exitCode !== null) return;
  witness.child.kill('SIGTERM');
  await once(witness.child, 'exit');
}

async function writeAndWitness(app: TestApp, org: TestOrg, count: number): Promise<any> {
  for (let at = 0; at < count; at += 100) {
    const n = Math.min(100, count - at);
    const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: n }, (_, i) => eventBody({ actor: { id: `g${at + i}` } })) } });
    expect(res.status).toBe(201);
  }
  return eventually('a witnessed checkpoint', async () => {
    const res = await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key });
    return res.status === 200 && res.body.tree_size >= count && res.body.installation?.witnessed ? res.body : null;
  });
}

async function goVerify(app: TestApp, org: TestOrg, ...args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(verifierBinary, ['-url', app.url, '-key', org.key, '-vkey', TEST_LEDGER_SIGNER.text, '-events', '5', ...args]);
    return { code: 0, stdout };
  } catch (error) {
    const failure = error as { code: number; stdout: string };
    return { code: failure.code, stdout: failure.stdout };
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gointerop-'));
  // Built once per source tree (globalSetup; here only if that build failed).
  [verifierBinary, witnessBinary] = await Promise.all([goProgram('verifier'), goProgram('testwitness')]);
}, 1_300_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('two independent witnesses', () => {
  let goWitness: GoWitness;
  let ours: WitnessProcess;
  let app: TestApp;
  let policyFile: string;
  beforeAll(async () => {
    goWitness = await startGoWitness('witness.example/transparency-dev');
    ours = await startWitnessProcess(dir, 'witness.example/ours', `log ${INSTALLATION_ORIGIN} ${TEST_LEDGER_SIGNER.text}\n`);
    const policy = `witness tdw ${goWitness.vkey} ${goWitness.url}\nwitness ours ${ours.vkey} ${ours.url}\ngroup both all tdw ours\nquorum both\n`;
    policyFile = join(dir, 'policy');
    writeFileSync(policyFile, policy);
    app = await startTestApp({ label: 'gointerop', witnessPolicy: parsePolicy(policy) });
  }, 60_000);
  afterAll(async () => {
    await app.close();
    await stopGoWitness(goWitness);
    await ours.stop();
  });

  test('transparency-dev\'s witness and ours cosign; Go\'s cosignature/v1 verifier accepts both, and Tessera\'s fsck reads both logs', async () => {
    const org = await app.org();
    // Past one full tile (256), so fsck meets full and partial tiles and entry bundles.
    const first = await writeAndWitness(app, org, 300);
    expect(first.installation.witnessed).toBe(true);
    const result = await goVerify(app, org, '-witness', goWitness.vkey, '-witness', ours.vkey, '-fsck');
    expect(result.stdout).not.toContain('FAIL');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('ok    2 of 2 witnesses cosigned it');
    expect(result.stdout).toMatch(/ok {4}the organization checkpoint is entry \d+ of the installation tree/);
    expect(result.stdout).toContain(`ok    Tessera fsck: every tile of ${TEST_LEDGER_SIGNER.name}/${org.id} rebuilt`);
    expect(result.stdout).toContain(`ok    Tessera fsck: every tile of ${INSTALLATION_ORIGIN} rebuilt`);

    // A witness the installation checkpoint does not carry fails the Go verifier.
    const stranger = cosignerKeyFileText('witness.example/stranger', randomBytes(32));
    const refused = await goVerify(app, org, '-witness', parseCosignerKeyFile(stranger).text);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('FAIL  0 of 1 witnesses cosigned it');

    // fsck finds a tile changed in the database.
    const tiles = app.collections.ledgerTiles;
    const tile = await tiles.findOne({ tenant: org.id, tile: `${org.id}/0/0`, width: 256 });
    if (!tile) throw new Error('no full tile');
    const hashes = Buffer.from(tile.hashes.buffer);
    hashes.writeUInt8(hashes.readUInt8(5) ^ 1, 5);
    await tiles.updateOne({ _id: tile._id }, { $set: { hashes: new Binary(hashes) } });
    const broken = await goVerify(app, org, '-fsck');
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain(`FAIL  Tessera fsck: every tile of ${TEST_LEDGER_SIGNER.name}/${org.id}`);
    hashes.writeUInt8(hashes.readUInt8(5) ^ 1, 5);
    await tiles.updateOne({ _id: tile._id }, { $set: { hashes: new Binary(hashes) } });
  }, 120_000);

  test('verify --policy accepts the export of a witnessed log, and says so; without it, says no witness was checked', async () => {
    const org = await app.org();
    await writeAndWitness(app, org, 12);
    const out = join(dir, `export-${org.id}.json`);
    const exported = await runCli(['export', '--url', app.url, '--key', org.key, '--out', out, '--with-proofs'], {});
    expect(exported.code).toBe(0);
    const witnessed = await runCli(['verify', '--verifier-key', TEST_LEDGER_SIGNER.text, '--events', out, '--proofs', `${out}.proofs.json`, '--policy', policyFile], {});
    expect(witnessed.stdout).not.toContain('FAIL');
    expect(witnessed.code).toBe(0);
    expect(witnessed.stdout).toContain('cosigned by tdw, ours: the policy\'s quorum (both) is met');
    expect(witnessed.stdout).toContain('Witnessed by tdw, ours');
    const plain = await runCli(['verify', '--verifier-key', TEST_LEDGER_SIGNER.text, '--events', out, '--proofs', `${out}.proofs.json`], {});
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain('No witness was checked');
    // A policy whose quorum the cosignatures do not meet fails.
    const other = cosignerKeyFileText('witness.example/absent', randomBytes(32));
    const strict = join(dir, 'strict-policy');
    writeFileSync(strict, `witness tdw ${goWitness.vkey}\nwitness absent ${parseCosignerKeyFile(other).text}\ngroup g all tdw absent\nquorum g\n`);
    const refused = await runCli(['verify', '--verifier-key', TEST_LEDGER_SIGNER.text, '--events', out, '--proofs', `${out}.proofs.json`, '--policy', strict], {});
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain('FAIL  cosigned by tdw: the policy\'s quorum (g) is NOT met');
  }, 120_000);
});

test('transparency-dev\'s witness refuses a wiped and restarted service: an alarm, nothing signed over it', async () => {
  const goWitness = await startGoWitness('witness.example/wipe');
  const policy = parsePolicy(`witness tdw ${goWitness.vkey} ${goWitness.url}\nquorum tdw\n`);
  try {
    const before = await startTestApp({ label: 'gowipe-before', witnessPolicy: policy });
    const org = await before.org();
    await writeAndWitness(before, org, 3);
    await before.close(); // drops the database
    const after = await startTestApp({ label: 'gowipe-after', witnessPolicy: policy });
    try {
      const again = await after.org();
      await call(`${after.url}/v1/events`, { key: again.key, body: eventBody() });
      await eventually('the alarm', () => Promise.resolve(after.services.integrator.haltedReason(INSTALLATION)));
      const doc = await after.collections.ledgerWitnesses.findOne({ name: 'tdw' });
      expect(doc?.alarm).toMatch(/cosigned a tree of \d+ entries/);
      expect(await after.collections.ledgerCheckpoints.countDocuments({ tenant: INSTALLATION })).toBe(0);
    } finally {
      await after.close();
    }
  } finally {
    await stopGoWitness(goWitness);
  }
}, 60_000);
