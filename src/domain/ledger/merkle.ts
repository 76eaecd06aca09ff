/**
 * RFC 6962 / RFC 9162 Merkle trees: hashing, roots, inclusion and consistency proofs, and their
 * verification (whose steps are `proofWalk.ts`'s, shared with the browser). Pure: the tree's complete-subtree hashes come from a `NodeSource`, which the storage
 * layer backs with tiles and tests back with plain arrays.
 *
 * Node (level, index) is the root of the complete subtree over leaves [index·2^level, (index+1)·2^level).
 */
import { hash } from 'node:crypto';
import { rootFromInclusion, rootsFromConsistency } from './proofWalk';

export const HASH_BYTES = 32;

/*
 * Hashing on the ingest path (a leaf and about one node per event). One-shot `hash` rather than
 * createHash, and its digest taken as a 'binary' (latin1) string and copied into a Buffer: `hash(…, 'buffer')`
 * gives each 32-byte digest an ArrayBuffer of its own, which costs more than the SHA-256 itself and
 * burdens the GC, where Buffer.from takes a slice of Node's shared pool (1.7 → 0.8 µs a leaf, 2.1 →
 * 0.7 µs a node, by microbenchmark). A node's input is assembled in one buffer, reused: nothing else
 * runs between filling it and hashing it.
 */
const digest = (data: string | Uint8Array): Buffer => Buffer.from(hash('sha256', data, 'binary'), 'binary');
const nodeInput = Buffer.alloc(1 + 2 * HASH_BYTES);
nodeInput[0] = 0x01;

/**
 * SHA-256(0x00 ‖ leaf), the leaf as bytes or as text (hashed as its UTF-8, where U+0000 is the byte
 * 0x00): the ingest path has the leaf's JSON, and hashing it directly saves two buffers per event.
 */
export function leafHash(leaf: Uint8Array | string): Buffer {
  return digest(typeof leaf === 'string' ? `\0${leaf}` : Buffer.concat([Buffer.of(0x00), leaf]));
}

/** SHA-256(0x01 ‖ left ‖ right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== HASH_BYTES || right.length !== HASH_BYTES) return digest(Buffer.concat([Buffer.of(0x01), left, right]));
  nodeInput.set(left, 1);
  nodeInput.set(right, 1 + HASH_BYTES);
  return digest(nodeInput);
}

/** The root of the empty tree: SHA-256 of nothing. */
export const EMPTY_ROOT = hash('sha256', '', 'buffer');

/** Complete-subtree hashes of one tree; may be asynchronous (tiles read from the database). */
export type NodeSource = (level: number, index: number) => Buffer | Promise<Buffer>;

/** The largest power of two strictly below n (n ≥ 2). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

/** MTH(D[lo:hi]) for a range that the tree's recursive split produces (lo is aligned to the split). */
export async function rangeHash(node: NodeSource, lo: number, hi: number): Promise<Buffer> {
  const n = hi - lo;
  if (n === 0) return EMPTY_ROOT;
  if (isPowerOfTwo(n) && lo % n === 0) return node(Math.log2(n), lo / n);
  const k = splitPoint(n);
  const [left, right] = await Promise.all([rangeHash(node, lo, lo + k), rangeHash(node, lo + k, hi)]);
  return nodeHash(left, right);
}

export function rootHash(node: NodeSource, size: number): Promise<Buffer> {
  return rangeHash(node, 0, size);
}

/** The audit path of leaf `index` in the tree of `size` leaves, from the leaf upwards (RFC 9162 §2.1.3.1). */
export async function inclusionProof(node: NodeSource, index: number, size: number): Promise<Buffer[]> {
  if (!(index >= 0 && index < size)) throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
  // Walk down from the root, asking for each sibling; the path lists them from the bottom. The
  // siblings are asked for all at once: from the database, the tiles they need are read in parallel.
  const path: Promise<Buffer>[] = [];
  let lo = 0;
  let hi = size;
  while (hi - lo > 1) {
    const k = splitPoint(hi - lo);
    if (index < lo + k) {
      path.push(rangeHash(node, lo + k, hi));
      hi = lo + k;
    } else {
      path.push(rangeHash(node, lo, lo + k));
      lo += k;
    }
  }
  return (await Promise.all(path)).reverse();
}

/** The consistency proof from the tree of `from` leaves to that of `to` (RFC 9162 §2.1.4.1). */
export async function consistencyProof(node: NodeSource, from: number, to: number): Promise<Buffer[]> {
  if (!(from >= 0 && from <= to)) throw new RangeError(`no consistency proof from ${from} to ${to}`);
  if (from === 0 || from === to) return [];
  const proof: Promise<Buffer>[] = [];
  let lo = 0;
  let hi = to;
  let m = from;
  let complete = true; // whether the subtree we are in is an old tree's complete subtree (b in the RFC)
  while (m !== hi - lo) {
    const k = splitPoint(hi - lo);
    if (m <= k) {
      proof.push(rangeHash(node, lo + k, hi));
      hi = lo + k;
    } else {
      proof.push(rangeHash(node, lo, lo + k));
      lo += k;
      m -= k;
      complete = false;
    }
  }
  if (!complete) proof.push(rangeHash(node, lo, hi));
  return (await Promise.all(proof)).reverse();
}

/** An in-memory NodeSource over all the leaf hashes of a tree (tests, the offline verifier, the audit). */
export function nodesOf(leafHashes: readonly Buffer[]): NodeSource {
  const levels: Buffer[][] = [[...leafHashes]];
  for (let level = 0; (levels[level]?.length ?? 0) > 1; level++) {
    const below = levels[level] as Buffer[];
    const above: Buffer[] = [];
    for (let i = 0; i + 1 < below.length; i += 2) above.push(nodeHash(below[i] as Buffer, below[i + 1] as Buffer));
    levels.push(above);
  }
  return (level, index) => {
    const hash = levels[level]?.[index];
    if (!hash) throw new RangeError(`no complete subtree at level ${level}, index ${index}`);
    return hash;
  };
}

export function verifyInclusion(index: number, size: number, leaf: Uint8Array, path: readonly Uint8Array[], root: Uint8Array): boolean {
  if (leaf.length !== HASH_BYTES || root.length !== HASH_BYTES || path.some((p) => p.length !== HASH_BYTES)) return false;
  const computed = rootFromInclusion<Uint8Array>(index, size, leaf, path, nodeHash);
  return computed !== null && Buffer.from(computed).equals(root);
}

/** Whether `proof` shows the tree of `from` leaves (root1) is a prefix of that of `to` (root2). */
export function verifyConsistency(from: number, to: number, proof: readonly Uint8Array[], root1: Uint8Array, root2: Uint8Array): boolean {
  if (from < 0 || to < from) return false;
  if (from === to) return proof.length === 0 && Buffer.from(root1).equals(root2);
  if (from === 0) return proof.length === 0;
  if (root1.length !== HASH_BYTES || root2.length !== HASH_BYTES || proof.some((p) => p.length !== HASH_BYTES)) return false;
  const roots = rootsFromConsistency<Uint8Array>(from, to, proof, root1, nodeHash);
  return roots !== null && Buffer.from(roots[0]).equals(root1) && Buffer.from(roots[1]).equals(root2);
}

/** The RFC 6962 root of leaves pushed one by one, in O(log n) memory: the perfect subtrees of the left edge. */
export class RootAccumulator {
  private readonly stack: { height: number; hash: Buffer }[] = [];

  push(leaf: Buffer): void {
    let node = { height: 0, hash: leaf };
    for (let top = this.stack.at(-1); top?.height === node.height; top = this.stack.at(-1)) {
      this.stack.pop();
      node = { height: node.height + 1, hash: nodeHash(top.hash, node.hash) };
    }
    this.stack.push(node);
  }

  root(): Buffer | null {
    let hash: Buffer | null = null;
    for (let i = this.stack.length - 1; i >= 0; i--) hash = hash ? nodeHash((this.stack[i] as { hash: Buffer }).hash, hash) : (this.stack[i] as { hash: Buffer }).hash;
    return hash;
  }
}
