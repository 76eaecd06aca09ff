/**
 * What the service keeps of its witnesses: one document per witness of the policy (the newest
 * checkpoint it cosigned, its last error, an alarm) and the cosignatures, one document each, inserted
 * once verified. A witness document has one writer at a time in practice (the instance that signed the
 * checkpoint it submits); a lost update only makes the next submission learn the size again (a 409).
 */
import type { Collections } from './database';
import type { LedgerCosignatureDoc, LedgerWitnessDoc } from './documents';
import { DUPLICATE_KEY } from './errors';

export class WitnessStore {
  constructor(private readonly c: Collections) {}

  /** The documents of these witnesses (by verifier key), one batch. */
  async witnesses(keys: readonly string[]): Promise<Map<string, LedgerWitnessDoc>> {
    if (keys.length === 0) return new Map();
    const docs = await this.c.ledgerWitnesses.find({ _id: { $in: [...keys] } }, { batchSize: keys.length }).toArray();
    return new Map(docs.map((doc) => [doc._id, doc]));
  }

  /** Every witness document: `ledger audit` reads their alarms, whatever the policy of the process reading. */
  all(): Promise<LedgerWitnessDoc[]> {
    return this.c.ledgerWitnesses.find({}).toArray();
  }

  async save(doc: LedgerWitnessDoc): Promise<void> {
    await this.c.ledgerWitnesses.replaceOne({ _id: doc._id }, doc, { upsert: true });
  }

  /** Clears a witness's alarm (an operator's decision, after investigating it). Returns whether it had one. */
  async clearAlarm(name: string): Promise<boolean> {
    const result = await this.c.ledgerWitnesses.updateMany({ name, alarm: { $ne: null } }, { $set: { alarm: null } });
    return result.modifiedCount > 0;
  }

  async insertCosignature(doc: LedgerCosignatureDoc): Promise<void> {
    try {
      await this.c.ledgerCosignatures.insertOne(doc, { writeConcern: { w: 'majority', j: true } });
    } catch (error) {
      // The same witness cosigned the same checkpoint again (a resubmission): the first one stays.
      if ((error as { code?: number }).code !== DUPLICATE_KEY) throw error;
    }
  }

  /** The cosignatures on the installation checkpoint with this id. */
  cosignatures(checkpoint: string): Promise<LedgerCosignatureDoc[]> {
    return this.c.ledgerCosignatures.find({ checkpoint }).toArray();
  }
}
