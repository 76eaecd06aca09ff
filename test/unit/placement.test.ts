/** The writer's pure core (src/ingest/placement.ts): where a round's units go, and which the cap refuses. */
import fc from 'fast-check';
import { NO_EVENTS, place, type Placeable, type Position } from '../../src/ingest/placement';

const newestOf = (known: Record<string, Position>) => (tenant: string) => known[tenant] ?? NO_EVENTS;
const capOf = (caps: Record<string, number>) => (tenant: string) => caps[tenant] ?? 0;
const unit = (tenant: string, events: number, capExempt = false): Placeable => ({ tenant, events, capExempt });

test('units of one tenant follow each other; other tenants number on their own', () => {
  const { placements, newest } = place(
    [unit('a', 2), unit('b', 1), unit('a', 3)],
    newestOf({ a: { seq: 10, month: '2026-11', monthSeq: 4 } }),
    capOf({ a: 100, b: 100 }),
    '2026-11',
  );
  expect(placements).toEqual([
    { first: { seq: 11, month: '2026-11', monthSeq: 5 } },
    { first: { seq: 1, month: '2026-11', monthSeq: 1 } },
    { first: { seq: 13, month: '2026-11', monthSeq: 7 } },
  ]);
  expect(newest.get('a')).toEqual({ seq: 15, month: '2026-11', monthSeq: 9 });
  expect(newest.get('b')).toEqual({ seq: 1, month: '2026-11', monthSeq: 1 });
});

test('a new month starts counting at 1; a month never goes backwards, even when this clock lags', () => {
  const last = { a: { seq: 7, month: '2026-10', monthSeq: 7 }, b: { seq: 3, month: '2026-12', monthSeq: 3 } };
  const { placements } = place([unit('a', 1), unit('b', 1)], newestOf(last), capOf({ a: 10, b: 10 }), '2026-11');
  expect(placements).toEqual([{ first: { seq: 8, month: '2026-11', monthSeq: 1 } }, { first: { seq: 4, month: '2026-12', monthSeq: 4 } }]);
});

test('the cap takes a unit whole or refuses it whole; a smaller unit after a refused one may still fit; an exempt unit is never refused', () => {
  const { placements, newest } = place(
    [unit('a', 3), unit('a', 2), unit('a', 1), unit('a', 5, true)],
    newestOf({ a: { seq: 8, month: '2026-11', monthSeq: 8 } }),
    capOf({ a: 10 }),
    '2026-11',
  );
  expect(placements).toEqual([
    { capped: true, month: '2026-11' },
    { first: { seq: 9, month: '2026-11', monthSeq: 9 } },
    { capped: true, month: '2026-11' },
    { first: { seq: 11, month: '2026-11', monthSeq: 11 } },
  ]);
  expect(newest.get('a')).toEqual({ seq: 15, month: '2026-11', monthSeq: 15 });
});

test('any round: every tenant numbered 1…n without gaps or repeats, and no month past its cap but by exempt units', () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ tenant: fc.constantFrom('a', 'b', 'c'), events: fc.integer({ min: 1, max: 5 }), capExempt: fc.boolean() }), { maxLength: 40 }),
      fc.record({ a: fc.nat(30), b: fc.nat(30), c: fc.nat(30) }),
      (units, caps) => {
        const { placements } = place(units, newestOf({}), capOf(caps), '2026-11');
        const seqs: Record<string, number[]> = { a: [], b: [], c: [] };
        const counted: Record<string, number> = { a: 0, b: 0, c: 0 };
        placements.forEach((p, i) => {
          const u = units[i] as Placeable;
          if (p.capped) return;
          for (let k = 0; k < u.events; k++) (seqs[u.tenant] as number[]).push(p.first.seq + k);
          if (!u.capExempt) expect(p.first.monthSeq + u.events - 1).toBeLessThanOrEqual(caps[u.tenant as 'a']);
          counted[u.tenant] = (counted[u.tenant] ?? 0) + u.events;
        });
        for (const t of ['a', 'b', 'c']) expect(seqs[t]).toEqual(Array.from({ length: counted[t] ?? 0 }, (_, k) => k + 1));
      },
    ),
    { seed: 20, numRuns: 300 },
  );
});

test('the service\'s own records take sequence numbers but no place in the month\'s count, and are never refused', () => {
  const at = (seq: number, monthSeq: number): Position => ({ seq, month: '2026-11', monthSeq });
  const units: Placeable[] = [
    { tenant: 'a', events: 1, capExempt: false },
    { tenant: 'a', events: 2, capExempt: true, counted: false },
    { tenant: 'a', events: 1, capExempt: false },
    { tenant: 'a', events: 1, capExempt: false },
  ];
  const { placements, newest } = place(units, () => at(3, 3), () => 5, '2026-11');
  expect(placements).toEqual([{ first: at(4, 4) }, { first: at(5, 4) }, { first: at(7, 5) }, { capped: true, month: '2026-11' }]);
  expect(newest.get('a')).toEqual(at(7, 5));
  // At the cap already, and in a new month: still placed, counting nothing.
  expect(place([{ tenant: 'a', events: 1, capExempt: true, counted: false }], () => at(9, 5), () => 5, '2026-12').placements).toEqual([{ first: { seq: 10, month: '2026-12', monthSeq: 0 } }]);
});
