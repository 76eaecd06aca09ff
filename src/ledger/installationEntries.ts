/**
 * The installation log's entries (the organizations' checkpoint bodies) as the write side reads them:
 * which stored entries are the service's own, whether the signed tree still has all of its entries, where
 * the next one goes, and whether an organization's log was ever checkpointed into it.
 */
import { leafHash } from '../domain/ledger/merkle';
import { INSTALLATION, logOrigin, LedgerHalt } from '../domain/ledger/log';
import type { RowMac } from '../domain/ledger/rowMac';
import { TILE_WIDTH } from '../domain/ledger/tiles';
import type { LedgerEntryDoc } from '../db/documents';
import { checkpointId } from '../db/ledgerStore';
import { isOwnEntry, sealEntry } from '../db/rowMacs';
import type { WriteContext } from './logState';
import { verifyCheckpoint } from './signedCheckpoint';
import { MissingTile, TileReader } from './tileReader';

/**
 * What an installation entry's `tenant` and `checkpoint` fields must be, from its body (an organization
 * checkpoint's origin, size and root lines) in the installation whose ledger is `name`; null when the
 * body is not a checkpoint body of one of its organizations' logs.
 */
export function entryFieldsOfBody(name: string, body: string): { tenant: string; checkpoint: string } | null {
  const lines = body.split('\n');
  const [origin = '', size = ''] = lines;
  const prefix = `${name}/`;
  if (lines.length !== 4 || lines[3] !== '' || !origin.startsWith(prefix) || !/^(0|[1-9][0-9]{0,15})$/.test(size)) return null;
  const tenant = origin.slice(prefix.length);
  if (tenant === '' || tenant === INSTALLATION || tenant.includes('/')) return null;
  return { tenant, checkpoint: checkpointId(tenant, Number(size)) };
}

/** Whether `entry`'s leaf is the one the installation tree of `size` signed at its index (read from the tiles `reader` reads). */
export async function signedLeafIs(reader: TileReader, size: number, entry: LedgerEntryDoc): Promise<boolean> {
  const index = entry._id;
  if (!Number.isInteger(index) || index < 0 || index >= size || typeof entry.body !== 'string') return false;
  const tile = Math.floor(index / TILE_WIDTH);
  try {
    const hashes = await reader.tile(0, tile, Math.min(TILE_WIDTH, size - tile * TILE_WIDTH));
    return hashes[index % TILE_WIDTH]?.equals(leafHash(entry.body)) ?? false;
  } catch (error) {
    if (error instanceof MissingTile) return false;
    throw error;
  }
}

/** The installation log's entries as this process knows them. */
export class InstallationEntries {
  /** The installation log's next free entry index as this instance last saw it (null: not known yet). */
  nextEntry: number | null = null;
  /**
   * The size of the installation log's newest checkpoint this key signed, as last loaded (null: not
   * loaded yet). No entry is ever written below it: entries are appended only once it is known.
   */
  signedEntries: number | null = null;
  /** Entries below this index were counted present when the installation log was loaded. */
  private entriesCounted = 0;
  /** Whether the entries written before MACs existed were looked for since this process started (the upgrade). */
  private entriesUpgraded = false;

  constructor(private readonly context: WriteContext) {}

  /**
   * Whether the installation log holds a checkpoint of `tenant`'s log: decided from the entries' bodies,
   * whose first line names the log, never from their `tenant` field, which nothing authenticates (entries
   * relabelled to another organization still count for theirs). An entry counts when it is the service's
   * own (a valid MAC) or when the signed installation tree covers it (its leaf is the one signed at its
   * index: an entry from before MACs, or one whose other fields were changed). Any other is foreign:
   * named, and not counted, or anyone who can write the database could halt any organization with an
   * entry made up for it.
   */
  async hadCheckpoints(tenant: string): Promise<boolean> {
    const { store, rowMac } = this.context;
    let signed: { size: number; reader: TileReader } | null | undefined;
    for await (const entry of store.entriesWithOrigin(logOrigin(this.context.name, tenant))) {
      if (rowMac && isOwnEntry(rowMac, entry)) return true;
      signed ??= await this.signedInstallationTree();
      if (signed && (await signedLeafIs(signed.reader, signed.size, entry))) return true;
      store.foreign.met('entry', entry, 'the installation log');
    }
    return false;
  }

  /** The installation log's signed size (as loaded, else its newest checkpoint this key signed) and a reader of its tiles; null: none. */
  private async signedInstallationTree(): Promise<{ size: number; reader: TileReader } | null> {
    const store = this.context.store.forTenant(INSTALLATION);
    let size = this.signedEntries;
    if (size === null) {
      const newest = await store.newestBySize();
      try {
        if (newest) verifyCheckpoint(this.context.name, this.context.signer, INSTALLATION, newest);
      } catch {
        return null;
      }
      size = newest?.size ?? 0;
    }
    return size > 0 ? { size, reader: new TileReader(store) } : null;
  }

  /**
   * At a load of the installation log whose tiles give its signed root (of `size` entries): every entry
   * below `size` must be there, or the log halts (an entry deleted from the signed tree: an organization's
   * checkpoints gone from it, and its index free for an entry that would not be the one signed). Checked
   * cheaply: a count of the entries not counted before in this process (the whole range at a start), or,
   * where all were, the last one. Once per process, the upgrade: entries below `size` written before
   * entries had a MAC get theirs, each only if its leaf is the one signed at its index and its `tenant`
   * and `checkpoint` fields are its body's; any other stays without one, foreign (named; `ledger audit`
   * reports it). Past the signed tree, an entry without a MAC is foreign like any other (ownEntries).
   */
  async checkEntries(size: number, reader: TileReader): Promise<void> {
    if (size === 0) return;
    const { store } = this.context;
    const from = Math.min(this.entriesCounted, size);
    const missing = from < size ? size - from - (await store.countEntries(from, size)) : (await store.hasEntry(size - 1)) ? 0 : 1;
    if (missing > 0) {
      throw new LedgerHalt(`${missing} of the installation log's entries ${from} to ${size - 1} are missing from its signed tree of ${size}: deleted behind the service's back (run \`ledger audit\`, which names them); nothing is appended below the signed size`);
    }
    this.entriesCounted = size;
    const rowMac = this.context.rowMac;
    if (this.entriesUpgraded || !rowMac) return;
    let sealed = 0;
    let batch: LedgerEntryDoc[] = [];
    for await (const entry of store.unsealedEntriesBelow(size)) {
      const fields = entryFieldsOfBody(this.context.name, entry.body);
      if (fields && fields.tenant === entry.tenant && fields.checkpoint === entry.checkpoint && (await signedLeafIs(reader, size, entry))) {
        batch.push(sealEntry(rowMac, { _id: entry._id, tenant: entry.tenant, checkpoint: entry.checkpoint, body: entry.body }));
      } else store.foreign.met('entry', entry, 'the installation log (an entry without a MAC inside the signed tree)');
      if (batch.length >= 500) {
        await store.sealEntries(batch);
        sealed += batch.length;
        batch = [];
      }
    }
    await store.sealEntries(batch);
    sealed += batch.length;
    if (sealed > 0) this.context.log.warn({ sealed, size }, 'installation log entries from before MACs, covered by its signed tree, were given their MAC');
    this.entriesUpgraded = true;
  }

  /**
   * The installation log's entries from index `from` to `to`, read back to be signed: each the service's
   * own (a valid MAC). A foreign one (written behind the service's back, or an entry of the service's
   * changed before it was signed) is never signed: it is moved aside into `foreign_rows` (named, counted,
   * kept as evidence) and its index filled at once (fillForeignPlace); the read goes on from there.
   */
  async ownEntries(from: number, to: number): Promise<LedgerEntryDoc[]> {
    const { store, rowMac } = this.context;
    if (!rowMac) throw new Error('reading installation log entries back to sign them needs the ledger signing key');
    const own: LedgerEntryDoc[] = [];
    for (let aside = 0; ; aside++) {
      const at = (own.at(-1)?._id ?? from - 1) + 1;
      if (at > to) return own;
      const read = await store.entriesBetween(at, to);
      const i = read.findIndex((entry) => !Number.isInteger(entry._id) || !isOwnEntry(rowMac, entry));
      if (i < 0) return [...own, ...read];
      own.push(...read.slice(0, i));
      const foreign = read[i] as LedgerEntryDoc;
      if (aside >= 16) throw new Error(`foreign installation log entries keep being met from index ${foreign._id} on; retried next round`);
      await store.setEntryAside(foreign, 'the installation log');
      if (Number.isInteger(foreign._id)) await this.fillForeignPlace(foreign._id, rowMac);
    }
  }

  /**
   * The index `index` of a foreign entry just moved aside, past the signed tree, filled so that the
   * installation log goes on: with a repeat of the service's own entry just before it (at index 0, just
   * after it), sealed for this index. Decision: the entries after it stay where they are rather than
   * being moved down or appended again, because another instance may be about to sign them from its
   * memory at their indices (`pending`): moving them under it would make it sign a tree that the stored
   * entries do not give. A repeated organization checkpoint is harmless: entries may hold a checkpoint
   * appended before (a reader's rollUp does too), and a monitor meets the same checkpoint twice, which
   * extends itself. With no entry of the service's own beside it, the next one appended here takes it.
   */
  private async fillForeignPlace(index: number, rowMac: RowMac): Promise<void> {
    const { store } = this.context;
    const near = await store.entriesBetween(Math.max(0, index - 1), index + 1);
    const source = near.find((e) => e._id === index - 1 && isOwnEntry(rowMac, e)) ?? near.find((e) => e._id === index + 1 && isOwnEntry(rowMac, e));
    if (!source) {
      this.nextEntry = Math.min(this.nextEntry ?? index, index);
      return;
    }
    // Taken meanwhile (another instance filled it first): the next read checks what is there.
    await store.insertEntry(sealEntry(rowMac, { _id: index, tenant: source.tenant, checkpoint: source.checkpoint, body: source.body }));
  }

  /** The first index from `at` on with no entry: entries are gapless, so a doubling probe and a bisection find it. */
  async firstFreeEntry(at: number): Promise<number> {
    const { store } = this.context;
    if (!(await store.hasEntry(at))) return at;
    let taken = at;
    let step = 1;
    while (await store.hasEntry(taken + step)) {
      taken += step;
      step *= 2;
    }
    let free = taken + step;
    while (free - taken > 1) {
      const middle = Math.floor((taken + free) / 2);
      if (await store.hasEntry(middle)) taken = middle;
      else free = middle;
    }
    return free;
  }
}
