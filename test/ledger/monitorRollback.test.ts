/**
 * The customer's monitor remembers the organization's newest checkpoint (size, root, signed note) in its
 * state file and holds the service to it on every run: a smaller checkpoint, one the service cannot
 * prove consistent with it, or none at all (a log deleted, wiped or halted) fails the run, whatever the
 * installation log shows; the state is replaced only by a run that passes. The rewrite it catches through
 * the installation log (an operator's reseal): witnesses.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkpointText, toBase64 } from '../../src/domain/ledger/formats';
import { signNote } from '../../src/domain/ledger/note';
import { call, eventBody, eventually } from '../helpers/api';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from '../helpers/harness';
import { runCli } from '../helpers/processes';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'monitor-rollback-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function write(app: TestApp, org: TestOrg, count: number): Promise<void> {
  const res = await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: count }, (_, i) => eventBody({ actor: { id: `m${i}` } })) } });
  expect(res.status).toBe(201);
}

/** The organization's newest checkpoint once it covers `size` events and is an entry of the installation log. */
async function rolledUp(app: TestApp, org: TestOrg, size: number): Promise<{ tree_size: number; root_hash: string; checkpoint: string }> {
  return eventually(`a checkpoint of ${size} in the installation log`, async () => {
    const res = await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key });
    return res.status === 200 && res.body.tree_size >= size && res.body.installation ? res.body : null;
  });
}

function monitor(app: TestApp, org: TestOrg, state: string) {
  return runCli(['monitor', '--url', app.url, '--key', org.key, '--verifier-key', TEST_LEDGER_SIGNER.text, '--state', state], {});
}

/** The organization checkpoint the state file remembers. */
function remembered(state: string): { size: number; root: string; note: string } {
  return (JSON.parse(readFileSync(state, 'utf8')) as { checkpoint: { size: number; root: string; note: string } }).checkpoint;
}

/** A first monitor run that passes, over an organization with three checkpoints of 3, 7 and 12 events (plus its own audit events). */
async function monitored(app: TestApp, org: TestOrg, state: string): Promise<number> {
  for (const n of [3, 4, 5]) {
    await write(app, org, n);
    await rolledUp(app, org, 1);
  }
  const cp = await rolledUp(app, org, 12);
  const first = await monitor(app, org, state);
  expect({ code: first.code, failures: first.stdout.split('\n').filter((line) => line.startsWith('FAIL')) }).toEqual({ code: 0, failures: [] });
  expect(remembered(state)).toMatchObject({ size: cp.tree_size, root: cp.root_hash });
  return cp.tree_size;
}

test('a rollback (events, ledger state and installation entries deleted, a shorter history signed) fails the monitor and leaves its state alone', async () => {
  const app = await startTestApp({ label: 'monitor-rollback' });
  const state = join(dir, 'rollback.state');
  const org = await app.org();
  let restarted: TestApp | null = null;
  try {
    const size = await monitored(app, org, state);
    const before = readFileSync(state, 'utf8');

    // Someone who can write the database wipes every trace of the organization's history, the
    // installation log's entries included (so the service does not halt), and a new, shorter history is signed.
    await app.services.integrator.stop();
    const c = app.collections;
    await Promise.all([
      c.events.deleteMany({ tenant: org.id }), c.ledgerTiles.deleteMany({ tenant: org.id }), c.ledgerCheckpoints.deleteMany({ tenant: org.id }),
      c.ledgerHeads.deleteMany({ _id: org.id }), c.ledgerEntries.deleteMany({ tenant: org.id }),
    ]);
    restarted = await startTestApp({ label: 'monitor-rollback-restart', sharedDbName: app.dbName });
    await write(restarted, org, 3);
    const server = restarted;
    const fresh = await eventually('the shorter history signed', async () => {
      const res = await call(`${server.url}/v1/ledger/checkpoint`, { key: org.key });
      return res.status === 200 && res.body.tree_size < size ? res.body : null;
    });

    const run = await monitor(restarted, org, state);
    expect(run.code).not.toBe(0);
    expect(run.stdout).toContain(`FAIL  the organization's checkpoint of ${fresh.tree_size} events is SMALLER than the one of ${size} this monitor saw before: the log was ROLLED BACK`);
    expect(run.stdout).toMatch(/NOT OK$/m);
    // The remembered checkpoint is still the old one: the next run fails too.
    expect(readFileSync(state, 'utf8')).toBe(before);
    expect(remembered(state).size).toBe(size);
    expect((await monitor(restarted, org, state)).code).not.toBe(0);
  } finally {
    await restarted?.close();
    await app.close();
  }
});

test('the organization\'s checkpoint and head deleted (its log halts): the monitor fails, saying the log is missing or halted and what it saw last', async () => {
  const app = await startTestApp({ label: 'monitor-missing' });
  const state = join(dir, 'missing.state');
  const org = await app.org();
  let restarted: TestApp | null = null;
  try {
    const size = await monitored(app, org, state);
    const before = readFileSync(state, 'utf8');
    await app.services.integrator.stop();
    await Promise.all([app.collections.ledgerCheckpoints.deleteMany({ tenant: org.id }), app.collections.ledgerHeads.deleteMany({ _id: org.id })]);
    restarted = await startTestApp({ label: 'monitor-missing-restart', sharedDbName: app.dbName });
    await write(restarted, org, 1);
    const server = restarted;
    await eventually('the organization halted', () => Promise.resolve(server.services.integrator.haltedReason(org.id)));
    expect((await call(`${restarted.url}/v1/ledger/checkpoint`, { key: org.key })).status).toBe(404);

    const run = await monitor(restarted, org, state);
    expect(run.code).not.toBe(0);
    expect(run.stdout).toContain(`FAIL  the organization's log ${TEST_LEDGER_SIGNER.name}/${org.id} is MISSING or HALTED: the service has no checkpoint of it (404), where this monitor last saw one of ${size} events`);
    expect(run.stderr).not.toMatch(/GET .*: 404/);
    expect(readFileSync(state, 'utf8')).toBe(before);
  } finally {
    await restarted?.close();
    await app.close();
  }
});

test('normal growth passes and is remembered; a remembered checkpoint the service cannot extend (a fork, a rewrite) fails', async () => {
  const app = await startTestApp({ label: 'monitor-growth' });
  const state = join(dir, 'growth.state');
  const org = await app.org();
  try {
    const size = await monitored(app, org, state);
    await write(app, org, 4);
    const grown = await rolledUp(app, org, size + 4);
    const second = await monitor(app, org, state);
    expect(second.stdout).not.toContain('FAIL');
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(`ok    the organization's checkpoint of ${grown.tree_size} events extends the one of ${size} this monitor saw before (consistency proof checked)`);
    expect(remembered(state)).toEqual({ size: grown.tree_size, root: grown.root_hash, note: grown.checkpoint });

    // A state that remembers a checkpoint of the same size with another root (signed by the same key): a fork.
    const saved = JSON.parse(readFileSync(state, 'utf8')) as Record<string, unknown>;
    const forged = (size: number) => {
      const root = Buffer.alloc(32, 9);
      const note = signNote(checkpointText({ origin: `${TEST_LEDGER_SIGNER.name}/${org.id}`, size, root }), TEST_LEDGER_SIGNER);
      writeFileSync(state, JSON.stringify({ ...saved, checkpoint: { size, root: toBase64(root), note } }));
    };
    forged(grown.tree_size);
    const fork = await monitor(app, org, state);
    expect(fork.code).toBe(1);
    expect(fork.stdout).toContain(`FAIL  the organization's checkpoint of ${grown.tree_size} events has another root than the one of the same size this monitor saw before: a FORK, the log was ROLLED BACK and rewritten`);
    // A smaller remembered checkpoint the current one does not extend.
    forged(size);
    const rewritten = await monitor(app, org, state);
    expect(rewritten.code).toBe(1);
    expect(rewritten.stdout).toContain(`FAIL  the organization's checkpoint of ${grown.tree_size} events is not consistent with the one of ${size} this monitor saw before`);
    expect(rewritten.stdout).toContain('ROLLED BACK');
  } finally {
    await app.close();
  }
});
