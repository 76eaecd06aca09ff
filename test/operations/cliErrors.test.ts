/**
 * The command line's failures, as a newcomer meets them: a missing file, a misspelled option and a wrong
 * key each give one sentence saying what failed and what to do, ending in a newline, with a non-zero exit
 * and no state written. (The README's verify example itself runs verbatim in docBlocks.test.ts; here its
 * verdict and state file are checked.)
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, eventBody } from '../helpers/api';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from '../helpers/harness';
import { runCli } from '../helpers/processes';

let app: TestApp;
let org: TestOrg;
let dir: string;
const WRONG_KEY = 'alk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

beforeAll(async () => {
  app = await startTestApp({ label: 'cli-errors' });
  org = await app.org();
  dir = mkdtempSync(join(tmpdir(), 'cli-errors-'));
  const events = Array.from({ length: 5 }, (_, i) => eventBody({ actor: { id: `a${i}` } }));
  expect((await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events } })).status).toBe(201);
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await app.close();
});

test('verify without witnesses says VERIFIED, that no witness was checked, and remembers the checkpoint', async () => {
  const events = join(dir, 'export.json');
  const exported = await runCli(['export', '--url', app.url, '--key', org.key, '--out', events, '--with-proofs'], {});
  // With --out, stdout's closing line says the size; stderr (no terminal here) stays quiet.
  expect({ code: exported.code, stderr: exported.stderr }).toEqual({ code: 0, stderr: '' });
  expect(exported.stdout).toMatch(/^Wrote \d+ bytes/m);
  const state = join(dir, 'auditor.checkpoint');
  const verified = await runCli(['verify', '--verifier-key', TEST_LEDGER_SIGNER.text, '--events', events, '--proofs', `${events}.proofs.json`, '--state', state], {});
  expect({ code: verified.code, stderr: verified.stderr }).toEqual({ code: 0, stderr: '' });
  expect(verified.stdout).toContain('VERIFIED: the export is the whole log up to the signed checkpoint, unchanged. No witness was checked');
  expect(existsSync(state)).toBe(true);
});

test('a missing --policy file: one line ending in a newline, a non-zero exit, and no --state written', async () => {
  const events = join(dir, 'policy.json');
  expect((await runCli(['export', '--url', app.url, '--key', org.key, '--out', events, '--with-proofs'], {})).code).toBe(0);
  const state = join(dir, 'never.checkpoint');
  const res = await runCli(['verify', '--verifier-key', TEST_LEDGER_SIGNER.text, '--events', events, '--proofs', `${events}.proofs.json`, '--policy', 'witnesses.policy', '--state', state], {});
  expect(res.code).toBe(1);
  expect(res.stderr).toBe("Cannot open witnesses.policy (--policy): there is no such file; check the path given to --policy\n");
  expect(res.stdout).toBe('');
  expect(existsSync(state)).toBe(false);
});

test('a misspelled option is answered with the closest valid one, for any command', async () => {
  const verify = await runCli(['verify', '--polcy', 'x', '--json'], {});
  expect(verify.code).toBe(2);
  expect(JSON.parse(verify.stdout)).toEqual({ error: 'Unknown option --polcy; did you mean --policy?' });
  expect(verify.stderr.split('\n')[0]).toBe('Unknown option --polcy; did you mean --policy?');
  const exported = await runCli(['export', '--url', app.url, '--key', org.key, '--with-proof'], {});
  expect(exported.code).toBe(2);
  expect(exported.stderr.split('\n')[0]).toBe('Unknown option --with-proof; did you mean --with-proofs?');
  expect(exported.stderr).not.toMatch(/ERR_PARSE_ARGS|at .*\.ts:\d+/);
});

test('export with a wrong key says the server refused the key, and what to do', async () => {
  const sentence = 'The server refused the API key (401 Missing or invalid API key): check --key';
  const withProofs = await runCli(['export', '--url', app.url, '--key', WRONG_KEY, '--out', join(dir, 'refused.json'), '--with-proofs'], {});
  expect({ code: withProofs.code, stderr: withProofs.stderr }).toEqual({ code: 1, stderr: `${sentence}\n` });
  const plain = await runCli(['export', '--url', app.url, '--key', WRONG_KEY, '--out', join(dir, 'refused.json'), '--json'], {});
  expect(plain.code).toBe(1);
  expect(JSON.parse(plain.stdout)).toEqual({ error: sentence });
});
