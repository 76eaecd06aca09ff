/**
 * The installation's ledger as a whole, for the two jobs that look at all of it: the start-up check that
 * the key file fits the stored ledger (ledger/keyFit.ts), and `ledger new-installation`, which drops the
 * ledger state, seals every stored row anew and records what it did (cli/commands/ledgerInstallation.ts).
 * Built from the Db by `npm start` (main.ts) and the admin command line's opener, which see no collections.
 */
import { resolve } from 'node:path';
import type { AnyBulkWriteOperation, Collection, Db } from 'mongodb';
import { redactUri } from './connect';
import { collections, type Collections, ensureIndexes } from './database';
import { isTombstone, type LedgerCheckpointDoc, leafCommitOfStored, type StoredEvent } from './documents';
import { checkpointId } from './ledgerStore';
import { eventMac, sealOutbox, sealTombstone } from './rowMacs';
import type { RowMac } from '../domain/ledger/rowMac';

/** The record a new installation leaves, one per run, kept for good. */
export interface LedgerInstallationDoc {
  _id: string;
  begun_at: Date;
  /** The operator's account and machine, as the command saw them. */
  by: string;
  key_file: string;
  /** The new key's verifier key: what auditors and customers pin from now on. */
  verifier_key: string;
  key_created: boolean;
  /** Who signed the ledger that was dropped, and its installation log's size (null: no head). */
  replaced: { signers: string[]; installation_size: number | null; checkpoints: number; entries: number };
  organizations: number;
  state: 'begun' | 'done';
  finished_at?: Date;
  /** The organizations sealed anew, and the size of each one's first checkpoint under the new key. */
  resealed?: { org: string; size: number }[];
}

/** The ledger's collections, dropped whole (a delete of many documents fails on FerretDB past 65,535). */
const LEDGER_COLLECTIONS = ['ledgerCheckpoints', 'ledgerTiles', 'ledgerHeads', 'ledgerEntries', 'ledgerCosignatures', 'ledgerWitnesses'] as const;
/** Updates in one command: FerretDB 1.24 hangs on update commands of 50 statements or more (docs/operations.md). */
const UPDATES_PER_COMMAND = 16;

/** Runs `updates` in commands of at most UPDATES_PER_COMMAND. */
async function updateInRuns<T extends object>(collection: Collection<T>, updates: AnyBulkWriteOperation<T>[]): Promise<void> {
  for (let at = 0; at < updates.length; at += UPDATES_PER_COMMAND) await collection.bulkWrite(updates.slice(at, at + UPDATES_PER_COMMAND), { ordered: true });
}

export class InstallationStore {
  private readonly c: Collections;
  private readonly records: Collection<LedgerInstallationDoc>;

  constructor(private readonly db: Db) {
    this.c = collections(db);
    this.records = db.collection<LedgerInstallationDoc>('ledger_installations');
  }

  /**
   * The stored checkpoints the key check looks at, never a scan: the installation log's newest (its head,
   * then the checkpoint by id: two point reads) and any one checkpoint (a read with no filter and no sort,
   * which FerretDB limits in PostgreSQL).
   */
  async sampleCheckpoints(installation: string): Promise<LedgerCheckpointDoc[]> {
    const found: LedgerCheckpointDoc[] = [];
    const head = await this.c.ledgerHeads.findOne({ _id: installation });
    if (head) {
      const newest = await this.c.ledgerCheckpoints.findOne({ _id: checkpointId(installation, head.size) });
      if (newest) found.push(newest);
    }
    const any = await this.c.ledgerCheckpoints.findOne({});
    if (any && !found.some((doc) => doc._id === any._id)) found.push(any);
    return found;
  }

  /** Which database this is and where its data is, for a message: the operator must know whether the data directory holds it. */
  async describe(uriGiven: string | undefined, dataDir: string): Promise<string> {
    const { db } = this;
    if (uriGiven !== undefined) return `${db.databaseName} (MONGODB_URI, ${redactUri(uriGiven)})`;
    // `buildInfo.ferretdbVersion` tells the bundled FerretDB (the fallback when no MongoDB could be downloaded).
    const info: Record<string, unknown> = await db.admin().command({ buildInfo: 1 }).catch(() => ({}));
    if ('ferretdbVersion' in info) return `${db.databaseName} (the bundled FerretDB: its data is in the local PostgreSQL, database ferretdb, schema ${db.databaseName}, not in the data directory)`;
    return `${db.databaseName} (the embedded MongoDB, under ${resolve(dataDir, 'mongodb')})`;
  }

  /** The size of the stored ledger: the installation log's head (null: none), its checkpoints and installation log entries. */
  async ledgerSize(installation: string): Promise<{ installation_size: number | null; checkpoints: number; entries: number }> {
    const head = await this.c.ledgerHeads.findOne({ _id: installation });
    return { installation_size: head?.size ?? null, checkpoints: await this.c.ledgerCheckpoints.countDocuments({}), entries: await this.c.ledgerEntries.countDocuments({}) };
  }

  /** Each registered instance's heartbeat counter, by instance id. */
  async instanceBeats(): Promise<Map<string, number>> {
    return new Map((await this.c.instances.find({}, { projection: { beat: 1 } }).toArray()).map((doc) => [doc._id, doc.beat]));
  }

  /** How many log streams exist. */
  countStreams(): Promise<number> {
    return this.c.streams.countDocuments({});
  }

  /** Gives every stored event, tombstone and waiting outbox record its MAC under the new key; returns how many rows could not be hashed. */
  async sealRows(mac: RowMac): Promise<{ rows: number; unreadable: number }> {
    const { c } = this;
    let rows = 0;
    let unreadable = 0;
    let batch: AnyBulkWriteOperation<StoredEvent>[] = [];
    for await (const doc of c.eventSlots.find({})) {
      let sealed: string | undefined;
      try {
        sealed = isTombstone(doc) ? sealTombstone(mac, doc).mac : eventMac(mac, doc, leafCommitOfStored(doc));
      } catch {
        unreadable++;
        continue;
      }
      if (sealed === undefined) continue;
      batch.push({ updateOne: { filter: { _id: doc._id, tenant: doc.tenant }, update: { $set: { mac: sealed } } } });
      rows++;
      if (batch.length >= 256) {
        await updateInRuns(c.eventSlots, batch);
        batch = [];
      }
    }
    await updateInRuns(c.eventSlots, batch);
    const outbox = await c.auditOutbox.find({}).toArray();
    await updateInRuns(c.auditOutbox, outbox.filter((doc) => doc.at instanceof Date).map(({ mac: _old, ...doc }) => ({ updateOne: { filter: { _id: doc._id }, update: { $set: { mac: sealOutbox(mac, doc).mac } } } })));
    return { rows: rows + outbox.length, unreadable };
  }

  /** Drops the ledger state (checkpoints, tiles, heads, installation log entries, witness records and cosignatures), then makes the indexes again. */
  async dropLedger(): Promise<void> {
    for (const name of LEDGER_COLLECTIONS) {
      try {
        await this.c[name].drop();
      } catch (error) {
        // Never created: nothing to drop.
        if ((error as { code?: number }).code !== 26) throw error;
      }
    }
    await ensureIndexes(this.c);
  }

  /** Records a new installation as begun, durably: a run cut short still leaves its record. */
  async recordBegun(record: LedgerInstallationDoc): Promise<void> {
    await this.records.insertOne(record, { writeConcern: { w: 'majority', j: true } });
  }

  /** Marks a new installation's record done, with the organizations sealed anew. */
  async recordDone(id: string, finishedAt: Date, resealed: { org: string; size: number }[]): Promise<void> {
    await this.records.updateOne({ _id: id }, { $set: { state: 'done', finished_at: finishedAt, resealed } });
  }
}
