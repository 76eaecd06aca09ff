/**
 * Reads one organization's tiles (src/domain/ledger/tiles.ts) and the nodes of its tree from them,
 * caching some for the life of the reader (one request, one round, one audit).
 */
import type { NodeSource } from '../domain/ledger/merkle';
import { entriesAt, split, subtreeRoot, tileId, TILE_HEIGHT, TILE_WIDTH } from '../domain/ledger/tiles';
import type { TenantLedgerStore } from '../db/ledgerStore';

/**
 * What one reader keeps, at most: tiles (8 KiB each) and computed nodes. Enough for every proof of a
 * request to share the tiles near the top of the tree; a reader that streams the proofs of a whole
 * organization starts afresh when full, so its memory stays flat whatever the organization's size.
 */
const MAX_CACHED_TILES = 64;
const MAX_CACHED_NODES = 4096;

/** A tile the tree needs is not stored (deleted, or never written). */
export class MissingTile extends Error {
  override readonly name = 'MissingTile';
}

export class TileReader {
  private readonly cache = new Map<string, Promise<Buffer[]>>();

  constructor(private readonly store: TenantLedgerStore) {}

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
    const tenant = this.store.tenant;
    const ids = width === TILE_WIDTH ? [tileId(tenant, level, index, width)] : [tileId(tenant, level, index, width), tileId(tenant, level, index, TILE_WIDTH)];
    const doc = await this.store.tile(ids);
    if (!doc) throw new MissingTile(`ledger tile ${tileId(tenant, level, index, width)} is missing`);
    return split(doc.hashes.buffer).slice(0, width);
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
