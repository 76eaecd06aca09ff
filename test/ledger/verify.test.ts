/**
 * The offline verifier: a real export and its proofs sidecar verify against the pinned key; an export
 * where one event's field, its place, or a whole event was changed, added or removed fails, naming it;
 * a state file makes the next verification prove that the log only grew.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, eventBody } from '../helpers/api';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from '../helpers/harness';
import { runCli } from '../helpers/processes';
import { pace } from '../helpers/waiting';

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
  expect(good.stdout).toContain("VERIFIED: the export is the whole log up to the signed checkpoint, unchanged");
  expect(good.stdout).toContain('40 of 40 events are in the signed tree of 40');
  expect(good.code).toBe(0);

  const events = JSON.parse(readFileSync(files.events, 'utf8')) as { id: string }[];
  const [first, second, third] = events as [{ id: string }, { id: string }, { id: string }];
  const cases: [string, (e: any[]) => void, RegExp][] = [
    ['field', (e) => { e[1].action = 'user.deleted'; }, new RegExp(`FAIL {2}event ${second.id}: not sequence number`)],
    ['metadata', (e) => { e[2].metadata.i = 999; }, new RegExp(`FAIL {2}event ${third.id}: not sequence number`)],
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
  expect(result.stdout).toMatch(new RegExp(`FAIL {2}event ${first.id}: (not sequence number|claims sequence number)`));
  // Another key did not sign it.
  const otherKey = await runCli(['verify', '--verifier-key', 'someone.else+12345678+AeEEaVqZ5nXXp0wCPsJKsNfTS6hCHVo/ReXWQGAIAaCq', '--events', files.events, '--proofs', files.proofs], {});
  expect(otherKey.code).toBe(1);
});

test('with a state file, the next verification proves the log only grew', async () => {
  const state = join(dir, 'state.checkpoint');
  // The log holds the 40 events and the records of the exports run before (audit_ledger.export.run).
  const sizeOf = (files: { events: string }) => (JSON.parse(readFileSync(files.events, 'utf8')) as unknown[]).length;
  const first = await exportWithProofs('before');
  const before = sizeOf(first);
  expect(before).toBeGreaterThanOrEqual(40);
  expect((await verify(first, '--state', state)).code).toBe(0);
  expect(readFileSync(state, 'utf8')).toContain(`\n${before}\n`);
  await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ actor: { id: 'later' } }) });
  const second = await exportWithProofs('after');
  // One event later, and the first export's own record.
  expect(sizeOf(second)).toBe(before + 2);
  const offline = await verify(second, '--state', state);
  expect(offline.code).toBe(1);
  expect(offline.stdout).toContain('needs --url and --key');
  const online = await verify(second, '--state', state, '--url', app.url, '--key', org.key);
  expect(online.stdout).toContain(`ok    the log of ${before + 2} extends the one of ${before} remembered before`);
  expect(online.code).toBe(0);
  expect(readFileSync(state, 'utf8')).toContain(`\n${before + 2}\n`);
});

test('an export with proofs taken while another client writes verifies: both are pinned to one checkpoint', async () => {
  const busy = await app.org({ plan: 'pro' });
  const batch = (n: number) => call(`${app.url}/v1/events/batch`, { key: busy.key, body: { events: Array.from({ length: n }, (_, i) => eventBody({ actor: { id: `busy${i}` } })) } });
  expect((await batch(50)).status).toBe(201);
  await call(`${app.url}/v1/events/${'0'.repeat(8)}-0000-7000-8000-000000000000/proof`, { key: busy.key });
  const writing = { on: true, batches: 0 };
  const writer = (async () => {
    while (writing.on) {
      expect((await batch(20)).status).toBe(201);
      writing.batches++;
      await pace(20, 'a steady writer beside the exports, not a flood');
    }
  })();
  try {
    for (let round = 0; round < 3; round++) {
      const events = join(dir, `busy${round}.json`);
      const exported = await runCli(['export', '--url', app.url, '--key', busy.key, '--out', events, '--with-proofs', '--json'], {});
      expect(exported.code).toBe(0);
      const summary = JSON.parse(exported.stdout) as { tree_size: number };
      const result = await verify({ events, proofs: `${events}.proofs.json` });
      expect(result.stdout).toContain(`every event of the signed tree: sequence numbers 1 to ${summary.tree_size}, each once`);
      expect(result.code).toBe(0);
    }
  } finally {
    writing.on = false;
    await writer;
  }
  expect(writing.batches).toBeGreaterThan(0);
});

test('an event deleted in the database makes an unfiltered export fail, naming its sequence number', async () => {
  const victim = await app.org();
  const created = await call(`${app.url}/v1/events/batch`, { key: victim.key, body: { events: Array.from({ length: 30 }, (_, i) => eventBody({ actor: { id: `d${i}` } })) } });
  expect(created.status).toBe(201);
  const newest = (created.body.events as { id: string }[])[29] as { id: string };
  expect((await call(`${app.url}/v1/events/${newest.id}/proof`, { key: victim.key })).status).toBe(200);
  await app.collections.events.deleteOne({ tenant: victim.id, seq: 17 });
  const events = join(dir, 'deleted.json');
  expect((await runCli(['export', '--url', app.url, '--key', victim.key, '--out', events, '--with-proofs'], {})).code).toBe(0);
  const result = await verify({ events, proofs: `${events}.proofs.json` });
  expect(result.code).toBe(1);
  expect(result.stdout).toContain('FAIL  missing without authority: the export lacks the events at sequence numbers 17 of the signed tree of 30');
  expect(result.stdout).toContain('NOT VERIFIED');
});

test('a field added to or missing from an exported event fails, naming the event and the field', async () => {
  const files = await exportWithProofs('strict');
  const ids = (JSON.parse(readFileSync(files.events, 'utf8')) as { id: string }[]).map((e) => e.id);
  const added = await verify(tampered(files, 'added-field', (e) => { e[3].comment = 'harmless?'; }));
  expect(added.code).toBe(1);
  expect(added.stdout).toContain(`FAIL  event ${ids[3]}: unknown field comment`);
  const missing = await verify(tampered(files, 'missing-field', (e) => { delete e[4].api_key_id; }));
  expect(missing.code).toBe(1);
  expect(missing.stdout).toContain(`FAIL  event ${ids[4]}: missing field api_key_id`);
  // Not reported as removed: the event is there, only not exactly as exported.
  expect(missing.stdout).not.toContain('missing from the export');
});

test('a filtered export verifies for inclusion only, and says so', async () => {
  const events = join(dir, 'filtered.json');
  expect((await runCli(['export', '--url', app.url, '--key', org.key, '--out', events, '--with-proofs', '--actor-id', 'v7'], {})).code).toBe(0);
  const result = await verify({ events, proofs: `${events}.proofs.json` });
  expect(result.code).toBe(0);
  expect(result.stdout).toContain('1 of 1 events are in the signed tree');
  expect(result.stdout).toContain('VERIFIED (INCLUSION ONLY)');
  expect(result.stdout).toContain('the export was filtered (actor_id=v7)');
  // An event the filters do not select, slipped into a filtered export, is named.
  const proofs = JSON.parse(readFileSync(`${events}.proofs.json`, 'utf8')) as { filters: Record<string, string> };
  proofs.filters = { actor_id: 'v8' };
  writeFileSync(join(dir, 'refiltered.proofs.json'), JSON.stringify(proofs));
  const refiltered = await verify({ events, proofs: join(dir, 'refiltered.proofs.json') });
  expect(refiltered.code).toBe(1);
  expect(refiltered.stdout).toMatch(/FAIL {2}event .*: does not match the export's filters/);
});
