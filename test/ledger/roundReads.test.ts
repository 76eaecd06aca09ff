/**
 * What a ledger round reads of the installation log: it loads it once per process (counting its entries
 * and checking its tiles give the signed root), then builds on what it signed itself. It loaded it again
 * every round before (the head it had just raised looked like another instance's progress), which on
 * FerretDB meant a scan of every entry per round, a cost growing with the installation's age. The
 * rounds are asked for directly (no interval fires during the test) and marked, so their commands are
 * theirs alone.
 */
import { createEvent } from '../helpers/api';
import { startTestApp, type TestApp } from '../helpers/harness';

const HOUR = 3_600_000;
let first: TestApp | undefined;
let app: TestApp | undefined;
afterAll(async () => {
  await app?.close();
  await first?.close();
});

/** The commands of one marked round of `tenant`'s log, after an event of it was stored. */
async function round(on: TestApp, tenant: string, key: string, marker: string): Promise<string[]> {
  await createEvent(on.url, key);
  await on.marked(marker, () => on.services.integrator.integrate(tenant));
  return on.commandsOf(marker).map((c) => `${c.commandName} ${String((c.command as Record<string, unknown>)[c.commandName])}`);
}

test('after its first round, a process does not load the installation log again for its own progress', async () => {
  first = await startTestApp({ label: 'round_reads', ledgerIntervalMs: HOUR });
  const org = await first.org();
  await round(first, org.id, org.key, 'before');
  // A process that starts on this database finds an installation log of one entry or more.
  app = await startTestApp({ label: 'round_reads', sharedDbName: first.dbName, ledgerIntervalMs: HOUR });
  const countsEntries = (commands: string[]) => commands.filter((c) => c === 'aggregate ledger_entries').length;
  const loading = await round(app, org.id, org.key, 'first');
  // Positive control: the first round loads the installation log, counting its entries.
  expect(countsEntries(loading)).toBe(1);
  for (const marker of ['second', 'third']) {
    const later = await round(app, org.id, org.key, marker);
    expect(later).toContain('insert ledger_entries'); // the round did append to the installation log
    expect(countsEntries(later)).toBe(0);
  }
});
