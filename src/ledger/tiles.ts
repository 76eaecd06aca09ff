/**
 * An organization's Merkle tree as C2SP tlog-tiles: tiles of 256 hashes, level L holding the nodes at
 * tree level 8L. Any node of the tree of a given size is one tile read plus at most 255 hashings, so a
 * root or a proof needs O(log n) tile reads, whatever the size: what FerretDB, where every read scans,
 * needs most.
 */
import { Binary } from 'mongodb';
import { HASH_BYTES, nodeHash, type NodeSource } from '../domain/ledger/merkle';
import type { Collections } from '../db/database';
import type { LedgerTileDoc } from '../db/documents';

export const TILE_WIDTH = 256;
export const TILE_HEIGHT = 8;
/**
 * What one reader keeps, at most: tiles (8 KiB each) and computed nodes. Enough for every proof of a
 * request to share the tiles near the top of the tree; a reader that streams the proofs of a whole
 * organization starts afresh when full, so its memory stays flat whatever the organization's size.
 */
const MAX_CACHED_TILES = 64;
const MAX_CACHED_NODES = 4096;

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

/** A tile the tree needs is not stored (deleted, or never written). */
export class MissingTile extends Error {
  override readonly name = 'MissingTile';
}

/** Reads one organization's tiles, caching some of them for the life of this object (one request, or one integration). */
export class TileReader {
  private readonly cache = new Map<string, Promise<Buffer[]>>();

  constructor(
    private readonly c: Collections,
    readonly tenant: string,
  ) {}

  /** Seeds the cache with tiles just written. */
  remember(level: number, index: number, hashes: Buffer[]): void {
    this.cache.set(`${level}/${index}/${hashes.length}`, Promise.resolve(hashes));
  }

  /**
   * The first `width` hashes of tile (level, index). A partial tile is stored at every width a
   * checkpoint had; once the tile is full, its partial versions may be gone, and its prefix serves.
   */
  tile(level: number, index: number, width: number): Promise<Buffer[]> {
    const key = `${level}/${index}/${width}`;
    let found = this.cache.get(key);
    if (!found) {
      if (this.cache.size >= MAX_CACHED_TILES) this.cache.clear();
      found = this.read(level, index, width);
      this.cache.set(key, found);
    }
    return found;
  }

  private async read(level: number, index: number, width: number): Promise<Buffer[]> {
    const ids = width === TILE_WIDTH ? [tileId(this.tenant, level, index, width)] : [tileId(this.tenant, level, index, width), tileId(this.tenant, level, index, TILE_WIDTH)];
    for (const id of ids) {
      const doc = await this.c.ledgerTiles.findOne({ _id: id });
      if (doc) return split(doc.hashes.buffer).slice(0, width);
    }
    throw new MissingTile(`ledger tile ${tileId(this.tenant, level, index, width)} is missing`);
  }

  /** The complete-subtree hashes of the tree of `size` leaves (some remembered: neighbouring proofs share most of theirs). */
  nodes(size: number): NodeSource {
    const known = new Map<string, Promise<Buffer>>();
    return (level, index) => {
      const key = `${level}/${index}`;
      let hash = known.get(key);
      if (!hash) {
        if (known.size >= MAX_CACHED_NODES) known.clear();
        hash = this.node(size, level, index);
        known.set(key, hash);
      }
      return hash;
    };
  }

  private async node(size: number, level: number, index: number): Promise<Buffer> {
    const tileLevel = Math.floor(level / TILE_HEIGHT);
    const height = level % TILE_HEIGHT;
    const first = index * 2 ** height;
    const tileIndex = Math.floor(first / TILE_WIDTH);
    const width = Math.min(TILE_WIDTH, entriesAt(size, tileLevel) - tileIndex * TILE_WIDTH);
    const offset = first - tileIndex * TILE_WIDTH;
    if (offset + 2 ** height > width) throw new RangeError(`node (${level}, ${index}) is not complete in a tree of ${size}`);
    const hashes = await this.tile(tileLevel, tileIndex, width);
    return subtreeRoot(hashes.slice(offset, offset + 2 ** height));
  }
}

export function tileDoc(tenant: string, level: number, index: number, hashes: Buffer[]): LedgerTileDoc {
  return { _id: tileId(tenant, level, index, hashes.length), tenant, tile: tileKey(tenant, level, index), width: hashes.length, hashes: new Binary(Buffer.concat(hashes)) };
}

/**
 * Every tile of the tree of the first `size` of `leaves` (full tiles, and the partial tile at each
 * level's right edge): what `ledger reseal` writes when it rebuilds a log from its events.
 */
export function tilesOf(tenant: string, leaves: readonly Buffer[], size: number): LedgerTileDoc[] {
  const docs: LedgerTileDoc[] = [];
  let hashes = leaves.slice(0, size);
  for (let level = 0; hashes.length > 0; level++) {
    const up: Buffer[] = [];
    for (let index = 0; index * TILE_WIDTH < hashes.length; index++) {
      const tile = hashes.slice(index * TILE_WIDTH, (index + 1) * TILE_WIDTH);
      docs.push(tileDoc(tenant, level, index, tile));
      if (tile.length === TILE_WIDTH) up.push(subtreeRoot(tile));
    }
    hashes = up;
  }
  return docs;
}
