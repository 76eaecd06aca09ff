/**
 * The README's and docs/' shell blocks, run as a newcomer pastes them (test/helpers/docBlocks.ts says how
 * a block is marked). Each block marked `<!-- doctest -->` runs verbatim, in order, in one bash per
 * block (`set -euo pipefail`) inside one temporary working directory, against a server of this suite,
 * with what the README tells the newcomer to have: `URL` (the address `npm start` printed), and for the
 * admin CLI the same database and signing key file as the server (MONGODB_URI, MONGODB_DB,
 * LEDGER_SIGNING_KEY_FILE; a newcomer's CLI finds them through ./data). Variables a block sets (ORG,
 * KEY, VERIFIER_KEY) carry over to the next blocks, as in one terminal. The working directory stands
 * for the clone: `npx audit-ledger` finds the repository's launcher in its node_modules/.bin, and npm
 * is offline, so npx can never fetch a package of that name from the registry. curl runs with
 * --fail-with-body, so an HTTP error fails the block rather than print a JSON error and go on.
 *
 * Blocks marked `<!-- doctest: skip … -->` say why they cannot run here: the start and test commands
 * (`npm start`, `npm test`) would start a second service or the suite inside the suite, which the jest
 * run itself stands for; others need what this machine has not (an outside destination, witnesses,
 * another machine, a key only an owner can give). Every shell block must be one or the other, so a new
 * block cannot escape.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { documentationBlocks } from '../helpers/docBlocks';
import { startTestApp, type TestApp } from '../helpers/harness';
import { ROOT, testLedgerKeyFile } from '../helpers/processes';

const blocks = documentationBlocks(ROOT);
let app: TestApp;
let dir: string;

beforeAll(async () => {
  app = await startTestApp({ label: 'doc-blocks' });
  dir = mkdtempSync(join(tmpdir(), 'doc-blocks-'));
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(join(ROOT, 'bin', 'audit-ledger.cjs'), join(dir, 'node_modules', '.bin', 'audit-ledger'));
  writeFileSync(join(dir, 'vars.sh'), '');
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await app.close();
});

/**
 * Runs one block in bash: the variables earlier blocks set first, the block verbatim, then the variables
 * it set (any the shell did not have when it began) saved for the next.
 */
async function runBlock(code: string): Promise<{ status: number | null; output: string }> {
  const script = [
    'set -euo pipefail',
    'curl() { command curl --fail-with-body "$@"; }',
    'source ./vars.sh',
    'compgen -v | sort > .vars-before',
    code,
    'for name in $(compgen -v | sort | comm -13 .vars-before -); do case $name in name|BASH_*|PIPESTATUS|_) ;; *) declare -p "$name" ;; esac; done >> ./vars.sh',
  ].join('\n');
  const child = spawn('bash', ['-c', script], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? dir,
      URL: app.url,
      MONGODB_URI: process.env.MONGODB_URI ?? '',
      MONGODB_DB: app.dbName,
      LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile(),
      LOG_LEVEL: 'warn',
      npm_config_offline: 'true',
      npm_config_update_notifier: 'false',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const [status] = (await once(child, 'exit')) as [number | null];
  return { status, output };
}

test('every shell block of the README and docs/ is marked to run or skipped with a reason', () => {
  const unmarked = blocks.filter((b) => b.mark === null || (b.mark === 'skip' && !b.reason)).map((b) => `${b.file}:${b.line}`);
  expect(unmarked).toEqual([]);
  // The README's first steps are among those run.
  expect(blocks.filter((b) => b.mark === 'run' && b.file === 'README.md').length).toBeGreaterThanOrEqual(2);
});

test('the blocks marked to run work verbatim, in order, against a server of the suite', async () => {
  const outputs: string[] = [];
  for (const block of blocks.filter((b) => b.mark === 'run')) {
    const { status, output } = await runBlock(block.code);
    if (status !== 0) throw new Error(`${block.file}:${block.line}: the block exited with ${status}:\n${block.code}\n--- its output ---\n${output}`);
    outputs.push(output);
  }
  // The first event's receipt names its sequence number, and the tree position beside it (README).
  const receipt = /"ledger":\{"seq":(\d+),"leaf_index":(\d+)/.exec(outputs[0] ?? '');
  expect(receipt).not.toBeNull();
  expect(Number(receipt?.[2])).toBe(Number(receipt?.[1]) - 1);
});
