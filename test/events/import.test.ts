/**
 * `cli import`: JSON Lines in batches, exactly once. Refused lines are reported by number and the rest
 * goes in; a run killed with SIGKILL and started again ends with every good line stored once.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventBody } from '../helpers/api';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { ROOT, runCli } from '../helpers/processes';
import { eventually } from '../helpers/waiting';

let app: TestApp;
let dir: string;

beforeAll(async () => {
  app = await startTestApp({ label: 'import' });
  dir = mkdtempSync(join(tmpdir(), 'import-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await app.close();
});

/** A JSON Lines file of `count` events, each carrying its line number; `bad` replaces chosen lines. */
function writeLines(name: string, count: number, bad: Record<number, string> = {}): string {
  const path = join(dir, name);
  const lines = Array.from({ length: count }, (_, i) => bad[i + 1] ?? JSON.stringify(eventBody({ metadata: { line: i + 1 } })));
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/** The line numbers stored for the organization, sorted, duplicates kept. */
async function storedLines(org: TestOrg): Promise<number[]> {
  const docs = await app.collections.events.find({ tenant: org.id }, { projection: { metadata: 1 } }).toArray();
  return docs.map((d) => (JSON.parse(d.metadata) as { line: number }).line).sort((a, b) => a - b);
}

const range = (from: number, to: number, except: number[] = []) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i).filter((n) => !except.includes(n));

const importArgs = (org: TestOrg, file: string) => ['import', '--url', app.url, '--key', org.key, '--batch-size', '100', file];

test('refused lines are reported with their numbers and the rest is stored, once; a second run stores nothing', async () => {
  const org = await app.org();
  const file = writeLines('mixed.jsonl', 450, {
    5: '{"actor": {"id": "a"}, "action": "x.y", "resource": {"type": "t", "id": "i"}, oops}',
    120: JSON.stringify({ action: 'no.actor', resource: { type: 't', id: 'i' }, metadata: { line: 120 } }),
    301: JSON.stringify({ ...eventBody({ metadata: { line: 301 } }), colour: 'blue' }),
    302: '[1, 2, 3]',
  });
  const first = await runCli([...importArgs(org, file), '--json'], {});
  expect(first.code).toBe(1);
  const summary = JSON.parse(first.stdout) as { imported: number; refused: { line: number; message: string; fields?: string[] }[] };
  expect(summary.refused.map((r) => r.line)).toEqual([5, 120, 301, 302]);
  expect(summary.refused[1]).toEqual({ line: 120, message: 'Missing required fields', fields: ['actor'] });
  expect(summary.refused[2]?.fields).toEqual(['colour']);
  expect(summary.imported).toBe(446);
  // Not a terminal: a plain progress line (the last one at the end).
  expect(first.stderr).toMatch(/import: line 450: 446 imported, 0 already there, 4 refused, \d+ events\/s/);
  expect(await storedLines(org)).toEqual(range(1, 450, [5, 120, 301, 302]));

  // Again: the state file says everything is done.
  const again = await runCli(importArgs(org, file), {});
  expect(again.stdout).toContain('Imported 0 events (resumed after line 450); 0 lines refused.');
  // Without the state file every batch is sent again, and each one's Idempotency-Key stores nothing.
  rmSync(`${file}.import-state.json`);
  const replay = await runCli([...importArgs(org, file), '--json'], {});
  expect(JSON.parse(replay.stdout)).toMatchObject({ imported: 0, replayed: 446 });
  expect(await storedLines(org)).toEqual(range(1, 450, [5, 120, 301, 302]));
});

test('reads stdin with -', async () => {
  const org = await app.org();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...importArgs(org, '-')], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end(`${range(1, 30).map((n) => JSON.stringify(eventBody({ metadata: { line: n } }))).join('\n')}\n`);
  const [code] = (await once(child, 'exit')) as [number];
  expect(code).toBe(0);
  expect(await storedLines(org)).toEqual(range(1, 30));
});

test('killed with SIGKILL midway and run again: every line stored exactly once, none missing', async () => {
  const org = await app.org();
  const file = writeLines('big.jsonl', 3000, { 1777: 'not json' });
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...importArgs(org, file)], { cwd: ROOT, stdio: 'ignore' });
  const exited = once(child, 'exit');
  // Killed once some batches are in, while others are being sent.
  await eventually('500 lines stored', async () => (await app.collections.events.countDocuments({ tenant: org.id })) >= 500, 60_000, 20);
  child.kill('SIGKILL');
  await exited;
  const partial = (await storedLines(org)).length;
  expect(partial).toBeLessThan(2999);

  const rerun = await runCli([...importArgs(org, file), '--json'], {});
  const summary = JSON.parse(rerun.stdout) as { resumed_after_line: number; refused: { line: number }[] };
  expect(summary.resumed_after_line).toBeGreaterThan(0);
  expect(summary.refused.map((r) => r.line)).toEqual([1777]);
  expect(await storedLines(org)).toEqual(range(1, 3000, [1777]));
});

test('the state file is bound to the input\'s content: a changed file is refused, not skipped', async () => {
  const org = await app.org();
  const file = writeLines('changing.jsonl', 120);
  expect((await runCli(importArgs(org, file), {})).code).toBe(0);
  expect(await storedLines(org)).toEqual(range(1, 120));
  // The same path, other content (as many lines, and more): the state file's lines are not these.
  const lines = Array.from({ length: 150 }, (_, i) => JSON.stringify(eventBody({ metadata: { line: 1000 + i } })));
  writeFileSync(file, `${lines.join('\n')}\n`);
  const changed = await runCli(importArgs(org, file), {});
  expect(changed.code).toBe(1);
  expect(changed.stderr).toContain('The input is not the one the state file');
  // Without its state file it is imported whole, with keys of its own: nothing taken for a replay.
  rmSync(`${file}.import-state.json`);
  const fresh = await runCli([...importArgs(org, file), '--json'], {});
  expect(fresh.code).toBe(0);
  expect(JSON.parse(fresh.stdout)).toMatchObject({ imported: 150, replayed: 0 });
  // The same content again: resumed past every line, nothing sent.
  const again = await runCli([...importArgs(org, file), '--json'], {});
  expect(JSON.parse(again.stdout)).toMatchObject({ imported: 0, replayed: 0, resumed_after_line: 150 });
});

test('the state file is never written through a symlink', async () => {
  const org = await app.org();
  const file = writeLines('linked.jsonl', 10);
  const victim = join(dir, 'victim.txt');
  writeFileSync(victim, 'precious\n');
  symlinkSync(victim, `${file}.import-state.json`);
  // The symlink's target is not a state file this command wrote: it refuses to read it, and writes nothing.
  const refused = await runCli(importArgs(org, file), {});
  expect(refused.code).toBe(1);
  expect(readFileSync(victim, 'utf8')).toBe('precious\n');
  // Given a state path whose name is a dangling symlink, the state is written in its place, not through it.
  const state = join(dir, 'state-link.json');
  symlinkSync(join(dir, 'not-there.json'), state);
  expect((await runCli([...importArgs(org, file), '--state', state], {})).code).toBe(0);
  expect(existsSync(join(dir, 'not-there.json'))).toBe(false);
  expect(lstatSync(state).isSymbolicLink()).toBe(false);
  expect(JSON.parse(readFileSync(state, 'utf8'))).toMatchObject({ next_line: 11 });
  // A symlink planted where a temporary file might be written is not followed either.
  const other = writeLines('planted.jsonl', 10);
  symlinkSync(victim, `${other}.import-state.json.tmp`);
  expect((await runCli(importArgs(org, other), {})).code).toBe(0);
  expect(readFileSync(victim, 'utf8')).toBe('precious\n');
});
