/**
 * The write side's memory of each log it integrates (organizations' and the installation log), and what
 * every part of the write side works with: the rounds (integrator.ts), the integration of one log
 * (integrate.ts), the installation log's roll-up (installationRollup.ts) and the operator's reseal.
 */
import type { Logger } from 'pino';
import type { EventHashes } from '../domain/ledger/eventHash';
import type { Signer } from '../domain/ledger/note';
import { RowMac } from '../domain/ledger/rowMac';
import type { Clock } from '../domain/time';
import type { LedgerStore } from '../db/ledgerStore';

/** The store, the key and the clock the write side signs with. */
export interface WriteContext {
  store: LedgerStore;
  /** The key name (LEDGER_NAME); an organization's log is `<name>/<organization id>`. */
  name: string;
  /** Null where nothing is ever signed (the admin CLI). */
  signer: Signer | null;
  /** Checks that the rows read back are the service's own (null: this process signs nothing). */
  rowMac: RowMac | null;
  clock: Clock;
  log: Logger;
}

/** The write side's context for `signer` (null: nothing is signed), its row key derived from it. */
export function writeContext(options: Omit<WriteContext, 'rowMac'>): WriteContext {
  return { ...options, rowMac: options.signer ? RowMac.fromSigner(options.signer) : null };
}

export interface LogState {
  /** Leaves integrated: the size of the newest checkpoint this instance signed or loaded. */
  size: number;
  /** Per tile level, the hashes of the partial tile at the tree's right edge. */
  edges: Buffer[][];
  /**
   * The hashes of events stored here and not integrated yet, by seq: not the documents, which would
   * otherwise live a second longer than their request. Their leaves are hashed by the round; their
   * receipts read the hashes from here. For the installation log: the entries appended here (their
   * bodies), by index + 1.
   */
  pending: Map<number, EventHashes | string>;
  /** The highest seq known stored: the round integrates up to it. */
  storedTo: number;
  loaded: boolean;
  /** When events were last handed over (ms): a log idle for IDLE_MS is dropped, and reloaded when needed. */
  active: number;
  /** When this instance last signed a checkpoint of it (ms; 0: never): the longest unsigned go first. */
  signedAt: number;
  /** Why nothing more is signed for this log (LedgerHalt), and since when (ms); null while it integrates. */
  halted: { reason: string; at: number } | null;
  /** When this instance first stored an event of the log while no checkpoint anchored it (ms; 0: not so). */
  unanchoredSince: number;
}

/** Every log's state on this instance, by tenant; a log's state is made when it is first needed. */
export class LogStates {
  private readonly logs = new Map<string, LogState>();

  constructor(private readonly clock: Clock) {}

  /** Now, in ms. */
  now(): number {
    return this.clock.now().getTime();
  }

  /** `tenant`'s state, made afresh (not loaded) when this instance holds none. */
  of(tenant: string): LogState {
    let state = this.logs.get(tenant);
    if (!state) {
      state = { size: 0, edges: [], pending: new Map(), storedTo: 0, loaded: false, active: this.now(), signedAt: 0, halted: null, unanchoredSince: 0 };
      this.logs.set(tenant, state);
    }
    return state;
  }

  /** `tenant`'s state if this instance holds one. */
  get(tenant: string): LogState | undefined {
    return this.logs.get(tenant);
  }

  /** Forgets `tenant`'s log: it is loaded again when next needed. */
  delete(tenant: string): void {
    this.logs.delete(tenant);
  }

  entries(): IterableIterator<[string, LogState]> {
    return this.logs.entries();
  }

  values(): IterableIterator<LogState> {
    return this.logs.values();
  }
}
