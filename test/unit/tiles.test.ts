/**
 * The integrator's pure core (src/domain/ledger/tiles.ts): growing a tree by its right edge in
 * uneven steps gives the root the naive construction gives, and exactly the tiles a rebuild from all
 * the leaves (`tilesOf`, what `ledger reseal` writes) has for that size.
 */
import fc from 'fast-check';
import { leafHash, nodesOf, rootHash } from '../../src/domain/ledger/merkle';
import { edgeRoot, extend, tilesOf, TILE_WIDTH } from '../../src/domain/ledger/tiles';

const leaves = Array.from({ length: TILE_WIDTH * 20 + 100 }, (_, i) => leafHash(`leaf ${i}`));
const key = (t: { level: number; index: number; hashes: Buffer[] }) => `${t.level}/${t.index}/${t.hashes.length}`;

test('one leaf at a time, for every size to 600: each edge gives the naive root', async () => {
  let edges: Buffer[][] = [];
  for (let size = 1; size <= 600; size++) {
    const next = extend(size - 1, edges, [leaves[size - 1] as Buffer]);
    expect(next.size).toBe(size);
    expect(edgeRoot(next.edges).equals(await rootHash(nodesOf(leaves.slice(0, size)), size))).toBe(true);
    edges = next.edges;
  }
});

test('uneven steps across tile boundaries (two tile levels): roots, the tiles written and the tiles filled', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 1500 }), { minLength: 1, maxLength: 8 }), async (steps) => {
      let size = 0;
      let edges: Buffer[][] = [];
      for (const step of steps) {
        const to = Math.min(leaves.length, size + step);
        if (to === size) break;
        const next = extend(size, edges, leaves.slice(size, to));
        expect(edgeRoot(next.edges).equals(await rootHash(nodesOf(leaves.slice(0, to)), to))).toBe(true);
        // Every tile this step wrote is one the rebuild of the new tree or a full tile of it has.
        const rebuilt = new Set(tilesOf(leaves, to).map(key));
        for (const tile of next.tiles) expect(rebuilt.has(key(tile))).toBe(true);
        // Filled: full now, partial in the tree the step started from.
        const before = new Map(tilesOf(leaves, size).map((t) => [`${t.level}/${t.index}`, t.hashes.length]));
        for (const { level, index } of next.filled) expect((before.get(`${level}/${index}`) ?? TILE_WIDTH) < TILE_WIDTH).toBe(true);
        size = to;
        edges = next.edges;
      }
    }),
    { seed: 6962, numRuns: 25 },
  );
});

test('the edge of an empty tree has no root', () => {
  expect(() => edgeRoot([])).toThrow(RangeError);
});
