/**
 * The RFC 6962 Merkle code against published vectors (transparency-dev/merkle: testonly/constants.go and
 * proof/verify_test.go) and, for every tree size from 1 to 300 and random larger ones, against a naive
 * recursive reference: roots, every inclusion proof and every consistency proof, each verified, and each
 * refused once corrupted.
 */
import fc from 'fast-check';
import {
  consistencyProof, EMPTY_ROOT, inclusionProof, leafHash, nodeHash, nodesOf, RootAccumulator, rootHash, verifyConsistency, verifyInclusion,
} from '../../src/domain/ledger/merkle';

const hex = (h: string) => Buffer.from(h, 'hex');
const LEAVES = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map(hex);
const ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
/** [leaf (1-based, as in the Go file), size, path]. */
const INCLUSION: [number, number, string[]][] = [
  [1, 8, ['96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4']],
  [6, 8, ['bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b', 'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7']],
  [3, 3, ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125']],
  [2, 5, ['6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b']],
];
const CONSISTENCY: [number, number, string[]][] = [
  [1, 8, ['96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4']],
  [6, 8, ['0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a', 'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7']],
  [2, 5, ['5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b']],
  [6, 7, ['0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a', 'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7']],
];

/** RFC 6962 §2.1 written as directly as possible: the reference the fast code is compared with. */
function naiveRoot(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return EMPTY_ROOT;
  if (leaves.length === 1) return leaves[0] as Buffer;
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return nodeHash(naiveRoot(leaves.slice(0, k)), naiveRoot(leaves.slice(k)));
}

const prefixHashes = (n: number, salt = 0) => Array.from({ length: n }, (_, i) => leafHash(Buffer.from(`leaf ${salt}:${i}`)));
const flip = (b: Buffer) => {
  const copy = Buffer.from(b);
  copy[0] = (copy[0] ?? 0) ^ 1;
  return copy;
};

describe('published RFC 6962 vectors', () => {
  const hashes = LEAVES.map(leafHash);
  test('roots of every size 0 to 8', async () => {
    for (let size = 0; size <= 8; size++) expect((await rootHash(nodesOf(hashes.slice(0, size)), size)).toString('hex')).toBe(ROOTS[size]);
  });
  test.each(INCLUSION)('inclusion of leaf %i in a tree of %i', async (leaf, size, path) => {
    const proof = await inclusionProof(nodesOf(hashes.slice(0, size)), leaf - 1, size);
    expect(proof.map((p) => p.toString('hex'))).toEqual(path);
    expect(verifyInclusion(leaf - 1, size, hashes[leaf - 1] as Buffer, proof, hex(ROOTS[size] as string))).toBe(true);
  });
  test.each(CONSISTENCY)('consistency from %i to %i', async (from, to, expected) => {
    const proof = await consistencyProof(nodesOf(hashes.slice(0, to)), from, to);
    expect(proof.map((p) => p.toString('hex'))).toEqual(expected);
    expect(verifyConsistency(from, to, proof, hex(ROOTS[from] as string), hex(ROOTS[to] as string))).toBe(true);
  });
  test('a leaf given as text is hashed as its UTF-8 bytes (the ingest path hashes the leaf JSON so)', () => {
    expect(leafHash('').toString('hex')).toBe(ROOTS[1]);
    for (const text of ['{"event_sha256":"ab","org":"o","seq":1,"v":1}', 'é\u0000€😀']) expect(leafHash(text).equals(leafHash(Buffer.from(text, 'utf8')))).toBe(true);
  });
  test('edge cases of the verifiers', () => {
    const some = hex(ROOTS[3] as string);
    expect(verifyConsistency(0, 5, [], EMPTY_ROOT, some)).toBe(true);
    expect(verifyConsistency(3, 3, [], some, some)).toBe(true);
    expect(verifyConsistency(3, 3, [], some, EMPTY_ROOT)).toBe(false);
    expect(verifyConsistency(4, 8, [], hex(ROOTS[4] as string), hex(ROOTS[8] as string))).toBe(false);
    expect(verifyConsistency(8, 4, [], some, some)).toBe(false);
    expect(verifyInclusion(0, 0, some, [], some)).toBe(false);
    expect(verifyInclusion(1, 1, some, [], some)).toBe(false);
    expect(verifyInclusion(0, 1, some, [], some)).toBe(true);
  });
});

describe('every tree size from 1 to 300', () => {
  const all = prefixHashes(300);
  const nodes = nodesOf(all);
  test('roots match the naive reference', async () => {
    for (let size = 1; size <= 300; size++) expect((await rootHash(nodes, size)).equals(naiveRoot(all.slice(0, size)))).toBe(true);
  });
  test('every inclusion proof verifies, and fails for the wrong index, leaf or a flipped hash', async () => {
    for (let size = 1; size <= 300; size++) {
      const root = naiveRoot(all.slice(0, size));
      for (let i = 0; i < size; i++) {
        const proof = await inclusionProof(nodes, i, size);
        const leaf = all[i] as Buffer;
        if (!verifyInclusion(i, size, leaf, proof, root)) throw new Error(`inclusion ${i} of ${size} does not verify`);
        if (size > 1 && verifyInclusion((i + 1) % size, size, leaf, proof, root)) throw new Error(`inclusion ${i} of ${size} verifies at another index`);
        if (verifyInclusion(i, size, flip(leaf), proof, root)) throw new Error(`a changed leaf verifies (${i} of ${size})`);
        if (proof.length > 0 && verifyInclusion(i, size, leaf, [flip(proof[0] as Buffer), ...proof.slice(1)], root)) throw new Error(`a changed path verifies (${i} of ${size})`);
      }
    }
  });
  test('every consistency proof verifies, and fails against another tree or when cut', async () => {
    const roots = [EMPTY_ROOT, ...Array.from({ length: 300 }, (_, i) => naiveRoot(all.slice(0, i + 1)))];
    for (let to = 1; to <= 300; to++) {
      for (let from = 1; from <= to; from++) {
        const proof = await consistencyProof(nodes, from, to);
        if (!verifyConsistency(from, to, proof, roots[from] as Buffer, roots[to] as Buffer)) throw new Error(`consistency ${from}→${to} does not verify`);
        if (from < to && verifyConsistency(from, to, proof.slice(0, -1), roots[from] as Buffer, roots[to] as Buffer)) throw new Error(`a cut proof ${from}→${to} verifies`);
        if (from < to && verifyConsistency(from, to, proof, flip(roots[from] as Buffer), roots[to] as Buffer)) throw new Error(`${from}→${to} verifies from another tree`);
      }
    }
  });
});

test('random larger trees: a rewritten history is never consistent with the original', async () => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 2, max: 5000 }), fc.nat(), fc.nat(), async (size, a, b) => {
      const leaves = prefixHashes(size, size);
      const nodes = nodesOf(leaves);
      const from = 1 + (a % (size - 1));
      const index = b % size;
      const root = await rootHash(nodes, size);
      expect(root.equals(naiveRoot(leaves))).toBe(true);
      expect(verifyInclusion(index, size, leaves[index] as Buffer, await inclusionProof(nodes, index, size), root)).toBe(true);
      const proof = await consistencyProof(nodes, from, size);
      const oldRoot = await rootHash(nodes, from);
      expect(verifyConsistency(from, size, proof, oldRoot, root)).toBe(true);
      // One old leaf changed: the old tree's root differs, and no proof from it reaches the new root.
      const edited = [...leaves];
      edited[index % from] = flip(edited[index % from] as Buffer);
      expect(verifyConsistency(from, size, proof, naiveRoot(edited.slice(0, from)), root)).toBe(false);
    }),
    { seed: 6962, numRuns: 40 },
  );
});

test('the streaming root accumulator (ledger audit) gives the published roots and the naive root of every size to 300', () => {
  const published = new RootAccumulator();
  expect(published.root()).toBeNull();
  LEAVES.forEach((leaf, i) => {
    published.push(leafHash(leaf));
    expect(published.root()?.toString('hex')).toBe(ROOTS[i + 1]);
  });
  const leaves = Array.from({ length: 300 }, (_, i) => leafHash(Buffer.from([i & 0xff, i >> 8])));
  const streaming = new RootAccumulator();
  leaves.forEach((leaf, i) => {
    streaming.push(leaf);
    expect(streaming.root()).toEqual(naiveRoot(leaves.slice(0, i + 1)));
  });
});
