/**
 * An organization's Merkle tree as C2SP tlog-tiles, pure: tiles of 256 hashes, level L holding the nodes
 * at tree level 8L. Any node of the tree of a given size is one tile plus at most 255 hashings, so a root
 * or a proof needs O(log n) tile reads, whatever the size: what FerretDB, where every read scans, needs
 * most. Reading tiles is `src/ledger/tileReader.ts`; storing them, `src/db/ledgerStore.ts`.
 */
import { HASH_BYTES, nodeHash } from './merkle';

export const TILE_WIDTH = 256;
export const TILE_HEIGHT = 8;

/** A tile's hashes at a position: the unit the store writes (one document per width it had). */
export interface Tile {
  level: number;
  index: number;
  hashes: Buffer[];
}

/** A tile's name, whatever its width: `<tenant>/<level>/<index>`. */
export function tileKey(tenant: string, level: number, index: number): string {
  return `${tenant}/${level}/${index}`;
}

export function tileId(tenant: string, level: number, index: number, width: number): string {
  return `${tileKey(tenant, level, index)}/${String(width).padStart(3, '0')}`;
}

/** How many nodes the tree of `size` leaves has at tile level L (tree level 8L). */
export function entriesAt(size: number, level: number): number {
  return Math.floor(size / TILE_WIDTH ** level);
}

export function split(hashes: Uint8Array): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i + HASH_BYTES <= hashes.length; i += HASH_BYTES) out.push(Buffer.from(hashes.subarray(i, i + HASH_BYTES)));
  return out;
}

/** The root of `hashes` (a power of two of them) hashed up as one complete subtree. */
export function subtreeRoot(hashes: Buffer[]): Buffer {
  let row = hashes;
  while (row.length > 1) {
    const up: Buffer[] = [];
    for (let i = 0; i < row.length; i += 2) up.push(nodeHash(row[i] as Buffer, row[i + 1] as Buffer));
    row = up;
  }
  return row[0] as Buffer;
}

/** What appending leaves to a tree of `from` leaves gives: the new right edge and the tiles to store. */
export interface Extension {
  size: number;
  /** Per tile level, the hashes of the partial tile at the new tree's right edge. */
  edges: Buffer[][];
  /** Every tile the extension filled, and each level's partial tile at the new edge. */
  tiles: Tile[];
  /** Tiles filled now that the tree of `from` left partial: their partial versions can go once the new tree is signed. */
  filled: { level: number; index: number }[];
}

/** Appends `leaves` to the tree of `from` leaves whose right edge is `edges` (left unchanged). */
export function extend(from: number, edges: readonly Buffer[][], leaves: readonly Buffer[]): Extension {
  const next = edges.map((edge) => [...edge]);
  const tiles: Tile[] = [];
  const filled: Extension['filled'] = [];
  let size = from;
  for (const leaf of leaves) {
    size++;
    let carry = leaf;
    for (let level = 0; ; level++) {
      const edge = (next[level] ??= []);
      edge.push(carry);
      if (edge.length < TILE_WIDTH) break;
      const index = entriesAt(size, level) / TILE_WIDTH - 1;
      tiles.push({ level, index, hashes: edge });
      if (entriesAt(from, level) > index * TILE_WIDTH) filled.push({ level, index });
      carry = subtreeRoot(edge);
      next[level] = [];
    }
  }
  next.forEach((edge, level) => {
    if (edge.length > 0) tiles.push({ level, index: Math.floor(entriesAt(size, level) / TILE_WIDTH), hashes: [...edge] });
  });
  return { size, edges: next, tiles, filled };
}

/**
 * Every tile of the tree of the first `size` of `leaves` (full tiles, and the partial tile at each
 * level's right edge): what `ledger reseal` writes when it rebuilds a log from its events.
 */
export function tilesOf(leaves: readonly Buffer[], size: number): Tile[] {
  const out: Tile[] = [];
  let hashes = leaves.slice(0, size);
  for (let level = 0; hashes.length > 0; level++) {
    const up: Buffer[] = [];
    for (let index = 0; index * TILE_WIDTH < hashes.length; index++) {
      const tile = hashes.slice(index * TILE_WIDTH, (index + 1) * TILE_WIDTH);
      out.push({ level, index, hashes: tile });
      if (tile.length === TILE_WIDTH) up.push(subtreeRoot(tile));
    }
    hashes = up;
  }
  return out;
}

/**
 * The root of a tree from its right edge alone (`Extension.edges`): the edge of tile level L holds the
 * nodes of tree level 8L not yet gathered into a full tile, so the binary digits of the size, high to
 * low, are its perfect subtrees, left to right, found level by level from the top, the largest runs of
 * each level first. RFC 6962's root folds them from the right. Only for a non-empty tree.
 */
export function edgeRoot(edges: readonly Buffer[][]): Buffer {
  const perfect: Buffer[] = [];
  for (let level = edges.length - 1; level >= 0; level--) {
    const edge = edges[level] ?? [];
    let at = 0;
    for (let run = TILE_WIDTH / 2; run >= 1; run /= 2) {
      if (edge.length - at >= run) {
        perfect.push(subtreeRoot(edge.slice(at, at + run)));
        at += run;
      }
    }
  }
  if (perfect.length === 0) throw new RangeError('an empty tree has no edge root');
  let root = perfect[perfect.length - 1] as Buffer;
  for (let i = perfect.length - 2; i >= 0; i--) root = nodeHash(perfect[i] as Buffer, root);
  return root;
}
