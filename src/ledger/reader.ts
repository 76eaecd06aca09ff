/**
 * The ledger's read side, per organization: its checkpoints and the nodes of its tree, for proofs.
 * Reading never integrates: a reader that waited long enough for a checkpoint (the instance that should
 * sign it stopped, or runs a long interval) asks the integrator for a round.
 */
import { consistencyProof, inclusionProof, type NodeSource } from '../domain/ledger/merkle';
import type { Verifier } from '../domain/ledger/note';
import type { Clock } from '../domain/time';
import { type LedgerCheckpointDoc, type LedgerEntryDoc, leafCommitOfStored, type StoredEvent } from '../db/documents';
import type { LeafCommit } from '../domain/ledger/formats';
import type { LedgerStore, TenantLedgerStore } from '../db/ledgerStore';
import { INSTALLATION, logOrigin } from '../domain/ledger/log';
import type { LedgerIntegrator } from './integrator';
import { TileReader } from './tileReader';
import { checkpointBody } from '../domain/ledger/witnessFormats';

/** How long a proof request waits for the checkpoint that includes its event, whatever the interval. */
const MAX_PROOF_WAIT_MS = 3000;

export interface LedgerReaderOptions {
  name: string;
  /** The installation's key, where this process has it (checks nothing here: served to clients). */
  verifier: Verifier | null;
  intervalMs: number;
}

/** How long a reader waits for a round: one interval, at most MAX_PROOF_WAIT_MS. */
function roundWait(intervalMs: number): number {
  return Math.min(intervalMs, MAX_PROOF_WAIT_MS);
}

/** `probe`'s first non-null answer, asked every 100 ms (or the interval, if shorter) for up to `roundWait`; null after. */
async function pollForRound<T>(intervalMs: number, clock: Clock, probe: () => Promise<T | null>): Promise<T | null> {
  const wait = roundWait(intervalMs);
  const deadline = clock.now().getTime() + wait;
  for (;;) {
    const found = await probe();
    if (found) return found;
    if (clock.now().getTime() >= deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, Math.min(100, wait)));
  }
}

/** One organization's log, read. */
export class TenantLedgerReader {
  constructor(
    private readonly store: TenantLedgerStore,
    private readonly options: LedgerReaderOptions,
    private readonly integrator: Pick<LedgerIntegrator, 'integrate' | 'haltedReason' | 'rollUp'> | null,
    private readonly clock: Clock,
  ) {}

  get origin(): string {
    return logOrigin(this.options.name, this.store.tenant);
  }

  /** The newest checkpoint: two point reads, the head and the checkpoint it names. */
  async newest(): Promise<LedgerCheckpointDoc | null> {
    const size = await this.store.headSize();
    return size === null ? null : this.store.checkpointOfSize(size);
  }

  ofSize(size: number): Promise<LedgerCheckpointDoc | null> {
    return this.store.checkpointOfSize(size);
  }

  /**
   * The newest checkpoint that includes leaf `index`, waiting up to one interval (at most
   * MAX_PROOF_WAIT_MS) for the next one, then asking this instance's integrator for a round. Null for a
   * halted log, or where this process signs nothing.
   */
  async covering(index: number): Promise<LedgerCheckpointDoc | null> {
    const found = await pollForRound(this.options.intervalMs, this.clock, async () => {
      const newest = await this.newest();
      return newest && newest.size > index ? newest : null;
    });
    if (found) return found;
    if (!this.integrator || this.integrator.haltedReason(this.store.tenant)) return null;
    await this.integrator.integrate(this.store.tenant, { storedTo: index + 1 });
    const newest = await this.newest();
    return newest && newest.size > index ? newest : null;
  }

  /** The log's events with from ≤ seq ≤ to (the tiles API's entry bundles). */
  eventsBetween(from: number, to: number): Promise<StoredEvent[]> {
    return this.store.eventsBetween(from, to);
  }

  /**
   * What the leaves at from ≤ seq ≤ to commit to, in order: from the events, or from the tombstones of
   * pruned and erased ones. Fewer than asked when some number holds neither (a gap).
   */
  async leafCommitsBetween(from: number, to: number): Promise<{ seq: number; commit: LeafCommit }[]> {
    return (await this.store.eventsBetween(from, to)).map((doc) => ({ seq: doc.seq, commit: leafCommitOfStored(doc) }));
  }

  /** The first `width` hashes of tile (level, index), as the tiles API serves them. */
  tile(level: number, index: number, width: number): Promise<Buffer[]> {
    return new TileReader(this.store).tile(level, index, width);
  }

  /** The tree of `size` leaves, for many proofs in a row. */
  nodes(size: number): NodeSource {
    return new TileReader(this.store).nodes(size);
  }

  inclusion(index: number, size: number): Promise<Buffer[]> {
    return inclusionProof(this.nodes(size), index, size);
  }

  consistency(from: number, to: number): Promise<Buffer[]> {
    return consistencyProof(this.nodes(to), from, to);
  }
}

/** Hands out the per-organization readers. */
export class LedgerReader {
  constructor(
    private readonly store: LedgerStore,
    readonly options: LedgerReaderOptions,
    private readonly integrator: Pick<LedgerIntegrator, 'integrate' | 'haltedReason' | 'rollUp'> | null,
    private readonly clock: Clock,
  ) {}

  get verifier(): Verifier | null {
    return this.options.verifier;
  }

  of(tenant: string): TenantLedgerReader {
    return new TenantLedgerReader(this.store.forTenant(tenant), this.options, this.integrator, this.clock);
  }

  /** The installation log's entries from index `from` to `to`. */
  entriesBetween(from: number, to: number): Promise<LedgerEntryDoc[]> {
    return this.store.entriesBetween(from, to);
  }

  /** The installation log, whose entries are the organizations' checkpoint bodies. */
  installation(): TenantLedgerReader {
    return this.of(INSTALLATION);
  }

  /**
   * The installation log's entry holding this organization checkpoint, waiting up to one interval (at
   * most MAX_PROOF_WAIT_MS) for the round that signed it to append it. A checkpoint older than that with
   * no entry was signed by an instance that stopped before appending it: this instance appends it.
   */
  async entryOf(checkpoint: LedgerCheckpointDoc): Promise<LedgerEntryDoc | null> {
    const body = checkpointBody(checkpoint.note);
    const entry = await pollForRound(this.options.intervalMs, this.clock, () => this.store.entryOf(checkpoint._id, body));
    if (entry) return entry;
    if (!this.integrator || this.clock.now().getTime() - checkpoint.created_at.getTime() < 2 * roundWait(this.options.intervalMs) + 5000) return null;
    // A round that fails here answers no entry (yet), not an error: the next request tries again.
    await this.integrator.rollUp(checkpoint).catch(() => undefined);
    return this.store.entryOf(checkpoint._id, body);
  }
}
