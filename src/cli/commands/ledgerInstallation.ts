/**
 * `ledger new-installation`: the operator's explicit way to begin a new installation on a database
 * whose ledger another key signed (the key file is lost; a start refuses: ledger/keyFit.ts). It keeps
 * the organizations, accounts, API keys and events, and begins every organization's log anew under the
 * key in the key file (made now when there is none): the old ledger state (checkpoints, tiles, heads,
 * the installation log's entries, the witnesses' records and cosignatures) is dropped, every stored
 * event and tombstone is taken as the new installation's own (its row MAC made with the new key), and
 * each organization's stored events are sealed as they are (`ledger reseal` with nothing to extend).
 * Nothing happens without `--confirm` or while an instance runs; what was done is logged at warn level
 * and recorded in `ledger_installations` before anything is dropped.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { hostname, userInfo } from 'node:os';
import { resolve } from 'node:path';
import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import { loadConfig } from '../../config/env';
import { connectDatabase } from '../../db/connect';
import { collections, type Collections, ensureIndexes } from '../../db/database';
import { isTombstone, leafCommitOfStored, type StoredEvent } from '../../db/documents';
import { LedgerStore } from '../../db/ledgerStore';
import { OrgRepository } from '../../db/orgRepository';
import { eventMac, sealOutbox, sealTombstone } from '../../db/rowMacs';
import { hex8 } from '../../domain/ledger/formats';
import { RowMac } from '../../domain/ledger/rowMac';
import { systemClock } from '../../domain/time';
import { INSTALLATION, LedgerHalt, LedgerIntegrator } from '../../ledger/integrator';
import { ledgerKeyMismatch } from '../../ledger/keyFit';
import { defaultLedgerName, loadOrCreateSigningKey, readSigningKey } from '../../ledger/signingKey';
import { createLogger } from '../../logger';
import { type Command, flag, UsageError } from '../command';

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
/** Instances bump their counter every second; one whose counter moves across this wait is running. */
const LIVENESS_WAIT_MS = 2500;

/** How many instances are running on the database: their heartbeat counters move. */
async function runningInstances(c: Collections): Promise<number> {
  const beats = async () => new Map((await c.instances.find({}, { projection: { beat: 1 } }).toArray()).map((doc) => [doc._id, doc.beat]));
  const before = await beats();
  if (before.size === 0) return 0;
  await sleep(LIVENESS_WAIT_MS);
  const after = await beats();
  return [...after].filter(([id, beat]) => before.has(id) && before.get(id) !== beat).length;
}

/** Runs `updates` in commands of at most UPDATES_PER_COMMAND. */
async function updateInRuns<T extends object>(collection: Collection<T>, updates: AnyBulkWriteOperation<T>[]): Promise<void> {
  for (let at = 0; at < updates.length; at += UPDATES_PER_COMMAND) await collection.bulkWrite(updates.slice(at, at + UPDATES_PER_COMMAND), { ordered: true });
}

/** Gives every stored event, tombstone and waiting outbox record its MAC under the new key; returns how many rows could not be hashed. */
async function sealRows(c: Collections, mac: RowMac): Promise<{ rows: number; unreadable: number }> {
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

async function dropLedger(c: Collections): Promise<void> {
  for (const name of LEDGER_COLLECTIONS) {
    try {
      await c[name].drop();
    } catch (error) {
      // Never created: nothing to drop.
      if ((error as { code?: number }).code !== 26) throw error;
    }
  }
}

export const ledgerInstallationCommands: Command[] = [
  {
    words: 'ledger new-installation',
    summary: 'begin a new installation on purpose: every organization\'s log signed anew under the key file\'s key (the old key is lost)',
    synopsis: '[--confirm]',
    details: [
      'For a database whose ledger another key signed, when that key file is lost (the service refuses to start). Keeps organizations, accounts, API keys',
      'and events; drops the ledger state (checkpoints, tiles, heads, installation log entries, witness records and cosignatures); takes every stored',
      'event as the new installation\'s own and seals each organization\'s events as they are, under the key in LEDGER_SIGNING_KEY_FILE (made now',
      'when there is none). Every customer\'s monitor sees a new verifier key and a history that does not extend the one it followed; the witnesses',
      'must be given the new key; log streams with secrets must be created again. Without --confirm it only says what it would do. Stop every',
      'instance first. Logged, and recorded in the collection ledger_installations. See the README, "Data and reset".',
    ].join('\n'),
    options: { confirm: flag },
    async run(values) {
      const config = loadConfig();
      const keyFile = resolve(config.ledgerKeyFile);
      const existing = readSigningKey(keyFile, config.ledgerName);
      const log = createLogger(process.env.LOG_LEVEL ?? 'warn', process.stderr);
      const database = await connectDatabase(config, log);
      try {
        const c = collections(database.db);
        const mismatch = await ledgerKeyMismatch(c, existing);
        if (!mismatch) {
          if (existing) throw new Error(`the stored ledger is signed by the key in ${keyFile} (${existing.name}, key id ${hex8(existing.id)}), or none is stored: the service starts with it as it is, and nothing is begun anew. For a halted organization, see \`ledger audit\` and \`ledger reseal\``);
          return { json: { begun: false, reason: 'no ledger checkpoint is stored' }, text: `No ledger checkpoint is stored: the service starts as it is (it makes the key ${keyFile} at its first start). Nothing was changed.` };
        }
        const orgIds = await new OrgRepository(c, config.planCaps).ids();
        const head = await c.ledgerHeads.findOne({ _id: INSTALLATION });
        const replaced = { signers: mismatch.signers, installation_size: head?.size ?? null, checkpoints: await c.ledgerCheckpoints.countDocuments({}), entries: await c.ledgerEntries.countDocuments({}) };
        const newKey = existing ? `the key in ${keyFile} (${existing.name}, key id ${hex8(existing.id)})` : `a new key, made at ${keyFile}`;
        const plan = `the stored ledger (${replaced.checkpoints} checkpoints, ${replaced.entries} installation log entries) was signed by ${replaced.signers.join(', ') || 'another key'}; a new installation would drop it and sign the logs of its ${orgIds.length} organization(s) anew under ${newKey}, keeping their events`;
        const running = await runningInstances(c);
        if (running > 0) throw new Error(`${running} instance(s) of the service are running on this database: stop every instance first (${plan})`);
        if (values.confirm !== true) throw new UsageError(`Nothing was changed: ${plan}. Every customer's monitor will see it. Run again with --confirm to do it.`);

        const { signer, created } = existing ? { signer: existing, created: false } : loadOrCreateSigningKey(keyFile, config.ledgerName, defaultLedgerName(config.publicUrl, config.port));
        const records = database.db.collection<LedgerInstallationDoc>('ledger_installations');
        const record: LedgerInstallationDoc = {
          _id: randomUUID(),
          begun_at: systemClock.now(),
          by: `${userInfo().username}@${hostname()}`,
          key_file: keyFile,
          verifier_key: signer.text,
          key_created: created,
          replaced,
          organizations: orgIds.length,
          state: 'begun',
        };
        // Recorded before anything is dropped: a run cut short still leaves its record.
        await records.insertOne(record, { writeConcern: { w: 'majority', j: true } });
        log.warn({ record: record._id, keyFile, verifierKey: signer.text, replaced }, 'NEW INSTALLATION begun by an operator: the ledger signed by another key is dropped and every organization\'s log is signed anew');
        const sealed = await sealRows(c, RowMac.fromSigner(signer));
        await dropLedger(c);
        await ensureIndexes(c);
        const integrator = new LedgerIntegrator(new LedgerStore(c), { name: signer.name, signer, intervalMs: config.ledgerIntervalMs }, systemClock, log);
        const resealed: { org: string; size: number }[] = [];
        for (const org of orgIds) {
          try {
            resealed.push({ org, size: (await integrator.reseal(org)).size });
          } catch (error) {
            // An organization with no events has no log to seal: its first event begins it.
            if (!(error instanceof LedgerHalt)) throw error;
          }
        }
        await records.updateOne({ _id: record._id }, { $set: { state: 'done', finished_at: systemClock.now(), resealed } });
        const streams = await c.streams.countDocuments({});
        const json = { begun: true, record: record._id, key_file: keyFile, key_created: created, verifier_key: signer.text, replaced, resealed, rows_sealed: sealed.rows, rows_unreadable: sealed.unreadable, streams };
        const text = [
          `Began a new installation (record ${record._id} in ledger_installations): ${resealed.length} of ${orgIds.length} organizations' logs signed anew under ${created ? 'a new key made at' : 'the key in'} ${keyFile}.`,
          `The new verifier key, for auditors, customers' monitors and the witnesses' configuration: ${signer.text}`,
          ...(sealed.unreadable ? [`${sealed.unreadable} stored rows could not be hashed and were left as they are (foreign; \`ledger audit\` names them).`] : []),
          ...(streams ? [`${streams} log stream(s) exist: their stored secrets were sealed with the old key; create those with a secret again.`] : []),
        ].join('\n');
        return { json, text };
      } finally {
        await database.close();
      }
    },
  },
];
