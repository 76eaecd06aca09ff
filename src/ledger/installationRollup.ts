/**
 * The installation log's roll-up: the organizations' checkpoints signed here become its entries (each
 * an organization checkpoint's body, sealed with its MAC), which its next checkpoint signs. Whoever
 * appends, the entries stay gapless, and none is ever written below the log's signed size.
 */
import { INSTALLATION, LedgerHalt } from '../domain/ledger/log';
import { checkpointBody } from '../domain/ledger/witnessFormats';
import type { LedgerCheckpointDoc } from '../db/documents';
import { sealEntry } from '../db/rowMacs';
import { InstallationEntries } from './installationEntries';
import { type FailLog, LogIntegration } from './integrate';
import { LogStates, type WriteContext } from './logState';

/** An organization checkpoint waiting to be appended to the installation log. */
interface Unrolled {
  tenant: string;
  checkpoint: string;
  body: string;
}

/** The organization checkpoints signed here and not yet entries of the installation log, and their appending. */
export class InstallationRollup {
  private readonly unrolled: Unrolled[] = [];

  constructor(
    private readonly context: WriteContext,
    private readonly states: LogStates,
    private readonly entries: InstallationEntries,
    private readonly integration: LogIntegration,
  ) {}

  /** Whether checkpoints wait to be appended. */
  get waiting(): boolean {
    return this.unrolled.length > 0;
  }

  /** Queues an organization checkpoint signed here (or found signed and not appended) for the next append. */
  add(checkpoint: LedgerCheckpointDoc): void {
    this.unrolled.push({ tenant: checkpoint.tenant, checkpoint: checkpoint._id, body: checkpointBody(checkpoint.note) });
  }

  /** Whether `checkpointId` waits to be appended already. */
  holds(checkpointId: string): boolean {
    return this.unrolled.some((u) => u.checkpoint === checkpointId);
  }

  /**
   * The organization checkpoints waiting, appended to the installation log at the next free indices: an
   * index another instance took makes this one look further (entries stay gapless whoever appends).
   * Never below the installation log's signed size: it is loaded first (`fail`: where its load's failure
   * goes; by default a halt is logged, anything else thrown), and while it is not known the checkpoints
   * wait (a reader appends one it finds missing later: LedgerReader.entryOf). An index free below it is
   * an entry deleted from the signed tree, which halts the installation log (checkEntries), never a
   * place to write: an entry written there would not be the one signed, and its proof would not verify.
   * Each entry carries its MAC (db/rowMacs.ts).
   */
  async append(fail: FailLog = (tenant, error) => {
    if (!(error instanceof LedgerHalt)) throw error;
    this.context.log.error({ tenant, reason: error.message }, 'the installation log is HALTED: checkpoints are appended only above its signed size');
  }): Promise<void> {
    if (this.unrolled.length === 0) return;
    const rowMac = this.context.rowMac;
    if (!rowMac) throw new Error('appending to the installation log needs the ledger signing key');
    const floor = await this.installationFloor(fail);
    if (floor === null) return;
    const state = this.states.of(INSTALLATION);
    let at = Math.max(this.entries.nextEntry ?? state.storedTo, floor);
    for (let tries = 0; this.unrolled.length > 0 && tries < 10; tries++) {
      at = await this.entries.firstFreeEntry(at);
      if (at > state.storedTo) state.storedTo = at;
      const docs = this.unrolled.map((entry, i) => sealEntry(rowMac, { _id: at + i, ...entry }));
      const stored = await this.context.store.insertEntries(docs);
      for (const doc of docs.slice(0, stored)) state.pending.set(doc._id + 1, doc.body);
      at += stored;
      if (at > state.storedTo) state.storedTo = at;
      this.unrolled.splice(0, stored);
    }
    this.entries.nextEntry = at;
  }

  /**
   * The installation log's signed size, loading the log first where it is not known, or where its head
   * says another instance signed further (one point read). Null while no checkpoint of it can be trusted
   * (its newest stored one is not this key's: the log is halted).
   */
  private async installationFloor(fail: FailLog): Promise<number | null> {
    const state = this.states.of(INSTALLATION);
    const heads = await this.context.store.heads([INSTALLATION]);
    const head = heads.get(INSTALLATION) ?? 0;
    const signedEntries = this.entries.signedEntries;
    if (signedEntries === null || head > signedEntries || (!state.loaded && !state.halted)) await this.integration.load([INSTALLATION], heads, fail);
    return this.entries.signedEntries;
  }
}

/** The parts of the write side, over one context: what the rounds run on, and what a reseal appends with. */
export interface WriteSide {
  context: WriteContext;
  states: LogStates;
  entries: InstallationEntries;
  integration: LogIntegration;
  rollup: InstallationRollup;
}

/** The write side over `context`, holding no log's state yet. */
export function openWriteSide(context: WriteContext): WriteSide {
  const states = new LogStates(context.clock);
  const entries = new InstallationEntries(context);
  const integration = new LogIntegration(context, states, entries);
  return { context, states, entries, integration, rollup: new InstallationRollup(context, states, entries, integration) };
}
