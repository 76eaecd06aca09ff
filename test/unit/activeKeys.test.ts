/**
 * The writer's key check (src/db/apiKeyRepository.ts, `ActiveKeys`): the revocation mark is trusted for
 * REVOCATION_MARK_LEASE_MS by both clocks, and a revocation waits longer than that before it answers.
 * Over a repository of our own and clocks moved by hand.
 */
import { ActiveKeys, type LeaseClocks, REVOCATION_MARK_LEASE_MS, REVOCATION_SETTLE_MS } from '../../src/db/apiKeyRepository';

function setUp() {
  const state = { mark: 'm1' as string | null, markReads: 0, keyReads: 0, active: new Map([['h1', { org_id: 'org_a' }]]) };
  const repository = {
    revocationMark: () => {
      state.markReads++;
      return Promise.resolve(state.mark);
    },
    activeAmong: (hashes: readonly string[]) => {
      state.keyReads++;
      return Promise.resolve(new Map(hashes.flatMap((h) => { const key = state.active.get(h); return key ? [[h, key] as const] : []; })));
    },
  };
  const time = { monotonic: 1_000, wall: 1_700_000_000_000 };
  const clocks: LeaseClocks = { monotonic: () => time.monotonic, wall: () => time.wall };
  return { state, time, keys: new ActiveKeys(repository, clocks) };
}

test('a revocation waits longer than a writer trusts a mark', () => {
  expect(REVOCATION_SETTLE_MS).toBeGreaterThan(REVOCATION_MARK_LEASE_MS);
});

test('the mark is read again once the lease has passed by either clock, or time went back', async () => {
  const { state, time, keys } = setUp();
  expect([...(await keys.among(['h1'])).keys()]).toEqual(['h1']);
  expect(state.markReads).toBe(2); // the first, and the check after looking the unknown key up
  time.monotonic += REVOCATION_MARK_LEASE_MS - 1;
  time.wall += REVOCATION_MARK_LEASE_MS - 1;
  await keys.among(['h1']);
  expect(state.markReads).toBe(2);

  time.monotonic += 1; // the lease by the monotonic clock
  await keys.among(['h1']);
  expect(state.markReads).toBe(3);

  time.wall += REVOCATION_MARK_LEASE_MS; // the wall clock alone moved (a paused machine's monotonic clock stood still)
  await keys.among(['h1']);
  expect(state.markReads).toBe(4);

  time.wall -= 1; // the wall clock set back
  await keys.among(['h1']);
  expect(state.markReads).toBe(5);
  expect(state.keyReads).toBe(1);
});

test('within the lease a revocation is not seen; after it, the key is looked up again and refused', async () => {
  const { state, time, keys } = setUp();
  await keys.among(['h1']);
  state.active.delete('h1');
  state.mark = 'm2';
  // Before the revocation answered (it waits REVOCATION_SETTLE_MS): the mark in hand is still trusted.
  time.monotonic += REVOCATION_MARK_LEASE_MS / 2;
  time.wall += REVOCATION_MARK_LEASE_MS / 2;
  expect((await keys.among(['h1'])).has('h1')).toBe(true);
  // Once it answered, every round refuses the key.
  time.monotonic += REVOCATION_SETTLE_MS;
  time.wall += REVOCATION_SETTLE_MS;
  expect((await keys.among(['h1'])).has('h1')).toBe(false);
  expect(state.keyReads).toBe(2);
});
