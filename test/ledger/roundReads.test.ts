/**
 * What a ledger round reads of the installation log: it loads it once per process (counting its entries
 * and checking its tiles give the signed root), then builds on what it signed itself. It loaded it again
 * every round before (the head it had just raised looked like another instance's progress), which on
 * FerretDB meant a scan of every entry per round, a cost growing with the installation's age. And with
 * one log due, the heads it reads are point reads: FerretDB reads every head of the installation for an
 * `$in` (several logs due are still one `$in`, one such read per round). The
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
  return on.commandsOf(marker).map((c) => {
    const command = c.command as Record<string, unknown>;
    const filter = c.commandName === 'find' ? ` ${JSON.stringify(command.filter)}` : '';
    return `${c.commandName} ${String(command[c.commandName])}${filter}`;
  });
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
    // The heads a round of one log reads (its log's, and the installation log's twice) are point reads,
    // not an `$in`: FerretDB answers an `$in` by reading every head of the installation.
    const heads = later.filter((c) => c.startsWith('find ledger_heads'));
    expect(heads).toEqual(expect.arrayContaining([`find ledger_heads {"_id":"${org.id}"}`, 'find ledger_heads {"_id":"installation"}']));
    expect(heads.filter((c) => c.includes('$in'))).toEqual([]);
  }
});
