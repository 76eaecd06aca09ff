/**
 * The offline verifier: a real export and its proofs sidecar verify against the pinned key; an export
 * where one event's field, its place, or a whole event was changed, added or removed fails, naming it;
 * a state file makes the next verification prove that the log only grew.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, eventBody } from './helpers/api';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from './helpers/harness';
import { runCli } from './helpers/processes';

let app: TestApp;
let org: TestOrg;
let dir: string;
const vkey = TEST_LEDGER_SIGNER.text;

beforeAll(async () => {
  app = await startTestApp({ label: 'verify' });
  org = await app.org();
  dir = mkdtempSync(join(tmpdir(), 'verify-'));
  const events = Array.from({ length: 40 }, (_, i) => eventBody({ actor: { id: `v${i}` }, metadata: { i, nested: { list: [i, 'é', null] } }, ...(i % 3 ? {} : { timestamp: '2024-03-01T12:00:00+02:00' }) }));
  expect((await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events } })).status).toBe(201);
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await app.close();
});

async function exportWithProofs(name: string): Promise<{ events: string; proofs: string }> {
  const events = join(dir, `${name}.json`);
  const res = await runCli(['export', '--url', app.url, '--key', org.key, '--out', events, '--with-proofs'], {});
  expect(res.code).toBe(0);
  return { events, proofs: `${events}.proofs.json` };
}

function verify(files: { events: string; proofs: string }, ...more: string[]) {
  return runCli(['verify', '--verifier-key', vkey, '--events', files.events, '--proofs', files.proofs, ...more], {});
}

/** A copy of the export with `change` applied to its parsed events. */
function tampered(files: { events: string; proofs: string }, name: string, change: (events: any[]) => void): { events: string; proofs: string } {
  const events = JSON.parse(readFileSync(files.events, 'utf8')) as any[];
  change(events);
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(events));
  return { events: path, proofs: files.proofs };
}

test('a real export verifies; every kind of change fails, naming the event', async () => {
  const files = await exportWithProofs('all');
  const good = await verify(files);
  expect(good.stdout).toContain('VERIFIED');
  expect(good.stdout).toContain('40 of 40 events are in the signed tree of 40');
  expect(good.code).toBe(0);

  const events = JSON.parse(readFileSync(files.events, 'utf8')) as { id: string }[];
  const [first, second, third] = events as [{ id: string }, { id: string }, { id: string }];
  const cases: [string, (e: any[]) => void, RegExp][] = [
    ['field', (e) => { e[1].action = 'user.deleted'; }, new RegExp(`FAIL {2}event ${second.id}: not leaf`)],
    ['metadata', (e) => { e[2].metadata.i = 999; }, new RegExp(`FAIL {2}event ${third.id}: not leaf`)],
    ['removed', (e) => { e.splice(1, 1); }, new RegExp(`FAIL {2}event ${second.id}: proven in the sidecar but missing from the export`)],
    ['added', (e) => { e.unshift({ ...e[0], id: '0190c8e4-0000-7000-8000-00000000abcd', timestamp: '2099-01-01T00:00:00.000Z' }); }, /FAIL {2}event 0190c8e4-0000-7000-8000-00000000abcd: no proof/],
    ['reordered', (e) => { [e[0], e[1]] = [e[1], e[0]]; }, new RegExp(`FAIL {2}event ${first.id}: out of the export's order`)],
  ];
  for (const [name, change, expected] of cases) {
    const result = await verify(tampered(files, name, change));
    expect([name, result.code]).toEqual([name, 1]);
    expect(result.stdout).toMatch(expected);
    expect(result.stdout).toContain('NOT VERIFIED');
  }
  // Its place in the log changed: the sidecar says another leaf.
  const sidecar = JSON.parse(readFileSync(files.proofs, 'utf8')) as { proofs: { event_id: string; leaf_index: number }[] };
  const moved = sidecar.proofs.find((p) => p.event_id === first.id);
  if (!moved) throw new Error('no proof for the first event');
  moved.leaf_index -= 1;
  const movedPath = join(dir, 'moved.proofs.json');
  writeFileSync(movedPath, JSON.stringify(sidecar));
  const result = await verify({ events: files.events, proofs: movedPath });
  expect(result.code).toBe(1);
  expect(result.stdout).toMatch(new RegExp(`FAIL {2}event ${first.id}: (not leaf|claims leaf)`));
  // Another key did not sign it.
  const otherKey = await runCli(['verify', '--verifier-key', 'someone.else+12345678+AeEEaVqZ5nXXp0wCPsJKsNfTS6hCHVo/ReXWQGAIAaCq', '--events', files.events, '--proofs', files.proofs], {});
  expect(otherKey.code).toBe(1);
});

test('with a state file, the next verification proves the log only grew', async () => {
  const state = join(dir, 'state.checkpoint');
  const first = await exportWithProofs('before');
  expect((await verify(first, '--state', state)).code).toBe(0);
  expect(readFileSync(state, 'utf8')).toContain('\n40\n');
  await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ actor: { id: 'later' } }) });
  const second = await exportWithProofs('after');
  const offline = await verify(second, '--state', state);
  expect(offline.code).toBe(1);
  expect(offline.stdout).toContain('needs --url and --key');
  const online = await verify(second, '--state', state, '--url', app.url, '--key', org.key);
  expect(online.stdout).toContain('ok    the log of 41 extends the one of 40 remembered before');
  expect(online.code).toBe(0);
  expect(readFileSync(state, 'utf8')).toContain('\n41\n');
});
