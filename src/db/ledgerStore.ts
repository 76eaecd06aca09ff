/**
 * The ledger's documents: tiles, checkpoints and each organization's head (the size of its newest
 * checkpoint, `ledger_heads`). `TenantLedgerStore` is bound to one organization: what requests, the
 * audit and a reseal read and write. `LedgerStore` is the system-wide side the integrator's round uses:
 * every call covers all the organizations due in that round, one command per collection, and reports
 * per document what failed, so one organization's failure stays its own.
 */
import { randomUUID } from 'node:crypto';
import { type AnyBulkWriteOperation, Binary, MongoBulkWriteError, type WriteError } from 'mongodb';
import type { Collections } from './database';
import type { InstallationStateDoc, LedgerCheckpointDoc, LedgerEntryDoc, LedgerHeadDoc, LedgerTileDoc, StoredEvent } from './documents';
import { DUPLICATE_KEY, isDuplicateKey } from './errors';
import { ForeignRows } from './foreignRows';
import pino from 'pino';
import { type Tile, tileId, tileKey } from '../domain/ledger/tiles';

/** A tile of `tenant`'s log as its document: one per width the tile had. */
export function tileDoc(tenant: string, { level, index, hashes }: Tile): LedgerTileDoc {
  return { _id: tileId(tenant, level, index, hashes.length), tenant, tile: tileKey(tenant, level, index), width: hashes.length, hashes: new Binary(Buffer.concat(hashes)) };
}

const DURABLE = { writeConcern: { w: 'majority' as const, j: true } };
/** Statements in one update command of heads: well below FerretDB's 50 PostgreSQL connections (see raiseHeads). */
const HEAD_UPDATES_PER_COMMAND = 16;

/** The checkpoint of `tenant`'s log of `size` leaves has this id, whoever signs it. */
export function checkpointId(tenant: string, size: number): string {
  return `${tenant}/${size}`;
}

/** The positions of a bulk write's documents the database refused, by error code; throws when the whole write failed. */
function refusals(error: unknown): Map<number, number | undefined> {
  if (error instanceof MongoBulkWriteError && !error.result.getWriteConcernError()) {
    const errors: WriteError[] = [error.writeErrors].flat();
    if (errors.length > 0) return new Map(errors.map((e) => [e.index, e.code]));
  }
  throw error;
}

export class TenantLedgerStore {
  constructor(
    private readonly c: Collections,
    readonly tenant: string,
  ) {}

  /** The size of the newest checkpoint as the head says (0: none, or no head yet). */
  async headSize(): Promise<number | null> {
    return (await this.c.ledgerHeads.findOne({ _id: this.tenant }))?.size ?? null;
  }

  checkpointOfSize(size: number): Promise<LedgerCheckpointDoc | null> {
    return this.c.ledgerCheckpoints.findOne({ _id: checkpointId(this.tenant, size) });
  }

  /** The newest stored checkpoint by a sorted read (FerretDB: a scan of the log's checkpoints), not through the head. */
  newestBySize(): Promise<LedgerCheckpointDoc | null> {
    return this.c.ledgerCheckpoints.findOne({ tenant: this.tenant }, { sort: { size: -1 } });
  }

  /** Every stored checkpoint, newest first (the audit, a reseal). */
  checkpointsNewestFirst(): AsyncIterable<LedgerCheckpointDoc> {
    return this.c.ledgerCheckpoints.find({ tenant: this.tenant }).sort({ size: -1 });
  }

  /** The first stored of these tile ids. */
  async tile(ids: readonly string[]): Promise<LedgerTileDoc | null> {
    for (const id of ids) {
      const doc = await this.c.ledgerTiles.findOne({ _id: id, tenant: this.tenant });
      if (doc) return doc;
    }
    return null;
  }

  /** The organization's events and tombstones in sequence order (the audit, a reseal). */
  eventsInOrder(): AsyncIterable<StoredEvent> {
    return this.c.eventSlots.find({ tenant: this.tenant }).sort({ seq: 1 });
  }

  /** Events (or their tombstones) with from ≤ seq ≤ to, in order: the ones a round was not handed, entry bundles. */
  eventsBetween(from: number, to: number): Promise<StoredEvent[]> {
    return this.c.eventSlots.find({ tenant: this.tenant, seq: { $gte: from, $lte: to } }, { batchSize: to - from + 1 }).sort({ seq: 1 }).toArray();
  }

  /** Some event or tombstone of the organization that carries a MAC, if any: whether MACs were ever written for it. */
  anySealedRow(): Promise<StoredEvent | null> {
    return this.c.eventSlots.findOne({ tenant: this.tenant, mac: { $exists: true } });
  }

  /** Gives these rows of the organization their MACs (an upgrade's, or a reseal's), a few per command (FerretDB). */
  async sealRows(seals: readonly { _id: string; seq: number; mac: string }[]): Promise<void> {
    for (let at = 0; at < seals.length; at += HEAD_UPDATES_PER_COMMAND) {
      const ops = seals.slice(at, at + HEAD_UPDATES_PER_COMMAND).map(({ _id, seq, mac }) => ({ updateOne: { filter: { _id, tenant: this.tenant, seq }, update: { $set: { mac } } } }));
      await this.c.eventSlots.bulkWrite(ops, { ordered: false, ...DURABLE });
    }
  }

  /** A reseal's writes: planted checkpoints out, the rebuilt tiles and checkpoint in, the head set (not raised). */
  async replaceLog(planted: readonly string[], tiles: readonly LedgerTileDoc[], checkpoint: LedgerCheckpointDoc): Promise<void> {
    if (planted.length) await this.c.ledgerCheckpoints.deleteMany({ tenant: this.tenant, _id: { $in: [...planted] } }, DURABLE);
    for (const doc of tiles) await this.c.ledgerTiles.replaceOne({ _id: doc._id }, doc, { upsert: true, ...DURABLE });
    await this.c.ledgerCheckpoints.replaceOne({ _id: checkpoint._id }, checkpoint, { upsert: true, ...DURABLE });
    await this.c.ledgerHeads.updateOne({ _id: this.tenant }, { $set: { size: checkpoint.size } }, { upsert: true, ...DURABLE });
  }
}

/** The integrator's side: the writes and reads of one round, for all of its organizations at once. */
export class LedgerStore {
  constructor(
    private readonly c: Collections,
    /** Rows met without a valid MAC: named, counted, moved aside (a store made without one names nothing). */
    readonly foreign: ForeignRows = new ForeignRows(c, pino({ enabled: false })),
  ) {}

  /** Whether every row stored before was sealed (InstallationStateDoc `row_macs`). */
  async rowsSealed(): Promise<InstallationStateDoc | null> {
    return this.c.installationState.findOne({ _id: 'row_macs' });
  }

  async markRowsSealed(at: Date, mac: string): Promise<void> {
    await this.c.installationState.updateOne({ _id: 'row_macs' }, { $set: { at, mac } }, { upsert: true, ...DURABLE });
  }


  /** The organizations with events or tombstones stored without a MAC (a scan: once, at an upgrade). */
  tenantsWithUnsealedRows(): Promise<string[]> {
    return this.c.eventSlots.distinct('tenant', { mac: { $exists: false } });
  }

  forTenant(tenant: string): TenantLedgerStore {
    return new TenantLedgerStore(this.c, tenant);
  }

  /**
   * The heads of these organizations, in one read. One organization's (the installation log's, twice a
   * round) is a point read: FerretDB serves an `$in` by reading every head, a thousand per round there.
   */
  async heads(tenants: readonly string[]): Promise<Map<string, number>> {
    if (tenants.length === 0) return new Map();
    if (tenants.length === 1) {
      const [tenant = ''] = tenants;
      const doc = await this.c.ledgerHeads.findOne({ _id: tenant });
      return new Map(doc ? [[doc._id, doc.size]] : []);
    }
    // One batch: a cursor left open holds one of FerretDB's PostgreSQL connections (src/domain/limited.ts).
    const docs = await this.c.ledgerHeads.find({ _id: { $in: [...tenants] } }, { batchSize: tenants.length }).toArray();
    return new Map(docs.map((doc) => [doc._id, doc.size]));
  }

  /** These checkpoints, by id, in one read. */
  async checkpoints(ids: readonly string[]): Promise<Map<string, LedgerCheckpointDoc>> {
    if (ids.length === 0) return new Map();
    const docs = await this.c.ledgerCheckpoints.find({ _id: { $in: [...ids] } }, { batchSize: ids.length }).toArray();
    return new Map(docs.map((doc) => [doc._id, doc]));
  }

  /**
   * Inserts tiles; one stored already (the same id names the same hashes) counts as written. Returns
   * the positions of those the database refused for another reason.
   */
  async insertTiles(docs: readonly LedgerTileDoc[]): Promise<Set<number>> {
    if (docs.length === 0) return new Set();
    try {
      await this.c.ledgerTiles.insertMany([...docs], { ordered: false, ...DURABLE });
      return new Set();
    } catch (error) {
      return new Set([...refusals(error)].filter(([, code]) => code !== DUPLICATE_KEY).map(([index]) => index));
    }
  }

  /** Inserts checkpoints; returns the positions found taken already (another signer, or an earlier try) and those refused. */
  async insertCheckpoints(docs: readonly LedgerCheckpointDoc[]): Promise<{ taken: Set<number>; refused: Set<number> }> {
    const taken = new Set<number>();
    const refused = new Set<number>();
    if (docs.length === 0) return { taken, refused };
    try {
      await this.c.ledgerCheckpoints.insertMany([...docs], { ordered: false, ...DURABLE });
    } catch (error) {
      for (const [index, code] of refusals(error)) (code === DUPLICATE_KEY ? taken : refused).add(index);
    }
    return { taken, refused };
  }

  /**
   * Moves heads up (never down: instances may finish rounds out of order). `existing`: the tenants whose
   * head the round read. Those are raised by `$max` updates, at most HEAD_UPDATES_PER_COMMAND to a
   * command; the others get their first head by one insert, and one raced by another instance's first
   * insert (a duplicate) is raised after it. No upserts and no large update commands: FerretDB 1.24 keeps
   * every statement's PostgreSQL connection until its `update` command ends (handler/msg_update.go defers
   * the close inside its loop), so a command of 50 or more statements waits for a connection it holds
   * itself, and the server stops answering anyone (docs/operations.md, "FerretDB").
   */
  async raiseHeads(sizes: ReadonlyMap<string, number>, existing: ReadonlySet<string>): Promise<void> {
    const raise = async (tenants: string[]) => {
      for (let at = 0; at < tenants.length; at += HEAD_UPDATES_PER_COMMAND) {
        const ops: AnyBulkWriteOperation<LedgerHeadDoc>[] = tenants
          .slice(at, at + HEAD_UPDATES_PER_COMMAND)
          .map((tenant) => ({ updateOne: { filter: { _id: tenant }, update: { $max: { size: sizes.get(tenant) ?? 0 } } } }));
        await this.c.ledgerHeads.bulkWrite(ops, { ordered: false, ...DURABLE });
      }
    };
    const fresh = [...sizes.keys()].filter((tenant) => !existing.has(tenant));
    await raise([...sizes.keys()].filter((tenant) => existing.has(tenant)));
    if (fresh.length === 0) return;
    try {
      await this.c.ledgerHeads.insertMany(fresh.map((tenant) => ({ _id: tenant, size: sizes.get(tenant) ?? 0 })), { ordered: false, ...DURABLE });
    } catch (error) {
      const failed = refusals(error);
      if ([...failed.values()].some((code) => code !== DUPLICATE_KEY)) throw error;
      await raise([...failed.keys()].map((index) => fresh[index] as string));
    }
  }

  /**
   * Appends installation-log entries at consecutive indices by one ordered insert: the entries stored
   * are a prefix of `docs` (an index taken by another instance stops it). Returns how many were stored.
   * Read back after a failure: FerretDB reports an ordered insert stopped part-way as storing nothing.
   */
  async insertEntries(docs: readonly LedgerEntryDoc[]): Promise<number> {
    if (docs.length === 0) return 0;
    try {
      await this.c.ledgerEntries.insertMany([...docs], { ordered: true, ...DURABLE });
      return docs.length;
    } catch (error) {
      if (!(error instanceof MongoBulkWriteError)) throw error;
      let stored = 0;
      for (const doc of docs) {
        const found = await this.c.ledgerEntries.findOne({ _id: doc._id });
        if (found?.checkpoint !== doc.checkpoint) break;
        stored++;
      }
      return stored;
    }
  }

  /** Whether the installation log has an entry at `index`. */
  async hasEntry(index: number): Promise<boolean> {
    return (await this.c.ledgerEntries.findOne({ _id: index }, { projection: { _id: 1 } })) !== null;
  }

  /** The installation log's entries from index `from` to `to`, in order (fewer when some are not stored). */
  entriesBetween(from: number, to: number): Promise<LedgerEntryDoc[]> {
    return this.c.ledgerEntries.find({ _id: { $gte: from, $lte: to } }, { batchSize: to - from + 1 }).sort({ _id: 1 }).toArray();
  }

  /**
   * The installation log's entries whose body is a checkpoint of the log `origin` (`<name>/<org id>`):
   * those whose first line is `origin`, by a range on the body (every such body lies between
   * `origin + "\n"` and `origin + "\v"`, the character after the newline), never by the `tenant` field,
   * which nothing authenticates. Whether they count is the caller's decision (their MACs, the signed tree).
   */
  entriesWithOrigin(origin: string): AsyncIterable<LedgerEntryDoc> {
    return this.c.ledgerEntries.find({ body: { $gt: `${origin}\n`, $lt: `${origin}\v` } }, { batchSize: 16 });
  }

  /** How many entries have an index from `from` to `to` − 1 (a signed range must hold every one). */
  countEntries(from: number, to: number): Promise<number> {
    return this.c.ledgerEntries.countDocuments({ _id: { $gte: from, $lt: to } });
  }

  /** The entries below index `size` with no MAC at all: written before entries had one (the upgrade). */
  unsealedEntriesBelow(size: number): AsyncIterable<LedgerEntryDoc> {
    return this.c.ledgerEntries.find({ _id: { $lt: size }, mac: { $exists: false } }, { batchSize: 1000 }).sort({ _id: 1 });
  }

  /**
   * Gives entries that had no MAC their MAC (`docs`: the entries, sealed), each only if it is still
   * exactly as read: at most HEAD_UPDATES_PER_COMMAND statements to a command (FerretDB, see raiseHeads).
   */
  async sealEntries(docs: readonly LedgerEntryDoc[]): Promise<void> {
    for (let at = 0; at < docs.length; at += HEAD_UPDATES_PER_COMMAND) {
      const ops: AnyBulkWriteOperation<LedgerEntryDoc>[] = docs.slice(at, at + HEAD_UPDATES_PER_COMMAND).map((doc) => ({
        updateOne: { filter: { _id: doc._id, tenant: doc.tenant, checkpoint: doc.checkpoint, body: doc.body, mac: { $exists: false } }, update: { $set: { mac: doc.mac } } },
      }));
      await this.c.ledgerEntries.bulkWrite(ops, { ordered: false, ...DURABLE });
    }
  }

  /**
   * Moves a foreign entry (no valid MAC) out of the installation log: named and counted (db/foreignRows.ts),
   * copied into `foreign_rows` whole, then exactly that document deleted (its index, its fields as read).
   */
  async setEntryAside(entry: LedgerEntryDoc, where: string): Promise<void> {
    this.foreign.met('entry', entry, where);
    await this.c.foreignRows.insertOne({ _id: randomUUID(), kind: 'entry', where, found_at: new Date(), row: { ...entry } });
    await this.c.ledgerEntries.deleteOne({ _id: entry._id, tenant: entry.tenant, checkpoint: entry.checkpoint, body: entry.body, mac: entry.mac ?? { $exists: false } }, DURABLE);
  }

  /** Inserts one entry at its index; false when the index is taken (by another instance meanwhile). */
  async insertEntry(doc: LedgerEntryDoc): Promise<boolean> {
    try {
      await this.c.ledgerEntries.insertOne(doc, DURABLE);
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  /** The installation log's entries in order (the audit). */
  entriesInOrder(): AsyncIterable<LedgerEntryDoc> {
    return this.c.ledgerEntries.find({}).sort({ _id: 1 });
  }

  /**
   * The installation log's entry holding this organization checkpoint (`body`: its body), if any: by its
   * id and its body, so an entry whose `checkpoint` field was changed to name another is not taken for it.
   */
  entryOf(checkpoint: string, body: string): Promise<LedgerEntryDoc | null> {
    return this.c.ledgerEntries.findOne({ checkpoint, body });
  }

  /**
   * Deletes the partial versions of tiles now full, in one write: the full tile's prefix serves every
   * tree they served. Without this, a log growing by a few events per round would keep a partial tile per
   * round, some KiB each, for ever.
   */
  async deletePartialTiles(tiles: readonly { tenant: string; tile: string }[], fullWidth: number): Promise<void> {
    if (tiles.length === 0) return;
    await this.c.ledgerTiles.bulkWrite(tiles.map(({ tenant, tile }) => ({ deleteMany: { filter: { tenant, tile, width: { $lt: fullWidth } } } })), { ordered: false });
  }
}
