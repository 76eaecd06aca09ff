/**
 * The integration of logs into their trees, one batch of logs at a time: load each log's newest signed
 * tree and verify it, read and hash the leaves past it, extend the tree (domain/ledger/tiles.ts, pure),
 * plan the signed checkpoint, write the tiles and checkpoints, raise the heads. Which logs, and when, is
 * the rounds' business (integrator.ts).
 *
 * The tree is a function of the stored events alone, and every write is an insert of a document whose
 * id names its content (a tile at a width, a checkpoint at a size): two instances that integrate the
 * same log write the same documents, and Ed25519 is deterministic, so they sign the same checkpoints.
 */
import { eventLeafHash, leafCommitOf } from '../domain/ledger/eventHash';
import type { LeafCommit } from '../domain/ledger/formats';
import { INSTALLATION, LedgerHalt, LogBehind } from '../domain/ledger/log';
import { leafHash, rootHash } from '../domain/ledger/merkle';
import type { Signer } from '../domain/ledger/note';
import type { RowMac } from '../domain/ledger/rowMac';
import { edgeRoot, entriesAt, extend, type Extension, tileKey, TILE_WIDTH } from '../domain/ledger/tiles';
import { mapLimited } from '../domain/limited';
import { isTombstone, leafCommitOfStored, type LedgerCheckpointDoc, type StoredEvent } from '../db/documents';
import { describeDbError } from '../db/errors';
import { checkpointId, tileDoc } from '../db/ledgerStore';
import { isOwnStored } from '../db/rowMacs';
import type { InstallationEntries } from './installationEntries';
import type { LogState, LogStates, WriteContext } from './logState';
import { signCheckpoint, verifyCheckpoint } from './signedCheckpoint';
import { MissingTile, TileReader } from './tileReader';

/** Events integrated for one organization in one round; the rest waits for the next round. */
const MAX_ROUND = 20_000;
/**
 * How long an instance that stored events of a log no checkpoint anchors yet, but not its first ones,
 * waits for the instance that stored those to begin it (a writer change between instances, or two
 * writing at once) before it takes the ledger state for lost.
 */
const BEGIN_GRACE_MS = 60_000;
/** Logs whose reads (a load, events read back) run at once in a round. */
const LOG_READS_IN_FLIGHT = 8;

/** A log with no checkpoint yet whose first events were stored by another instance: that one begins it. */
export class NotBegunHere extends Error {
  override readonly name = 'NotBegunHere';
}

/**
 * What the installation log asks of the witnesses: `check` before it signs a tree (throws LedgerHalt
 * when a witness holds a history this tree does not extend: an alarm), `signed` once it signed one here.
 */
export interface InstallationWitnessing {
  check(size: number, rootAt: (size: number) => Promise<Buffer>): Promise<void>;
  signed(checkpoint: LedgerCheckpointDoc): void;
}

/** Where a log's failure goes (the rounds decide: a halt, a retry, nothing). */
export type FailLog = (tenant: string, error: unknown) => void;

/** One log's part of a round, once its leaves are hashed: what it will write. */
export interface Plan {
  tenant: string;
  state: LogState;
  extension: Extension;
  checkpoint: LedgerCheckpointDoc;
  /** Inserted by this round (not found signed already, by another instance or before a restart). */
  fresh: boolean;
}

/**
 * What the leaf of a stored event or tombstone commits to, if the row is the service's own (a valid MAC,
 * db/rowMacs.ts); null for a foreign row. Without a row key (nothing is signed) every readable row counts.
 */
function ownCommit(rowMac: RowMac | null, doc: StoredEvent): LeafCommit | null {
  let commit: LeafCommit;
  try {
    commit = leafCommitOfStored(doc);
  } catch {
    return null;
  }
  return !rowMac || isOwnStored(rowMac, doc, commit) ? commit : null;
}

/** The log's next tree in memory: its tiles, root and signed checkpoint. */
function planOf(name: string, tenant: string, state: LogState, extension: Extension, signer: Signer, now: Date): Plan {
  const checkpoint = signCheckpoint(name, tenant, extension.size, edgeRoot(extension.edges), signer, now);
  return { tenant, state, extension, checkpoint, fresh: true };
}

/** Integrates batches of logs into their trees, over the logs' states this instance holds. */
export class LogIntegration {
  /** Checkpoints this process inserted (not those found signed already). */
  checkpointsSigned = 0;

  constructor(
    private readonly context: WriteContext,
    private readonly states: LogStates,
    private readonly entries: InstallationEntries,
  ) {}

  /**
   * Integrates these logs: one read of their heads, loads where needed, their leaves hashed, one insert
   * of all their tiles, one of all their checkpoints, the heads raised. Returns the plans signed.
   * `witnessing` is asked before the installation log's tree is signed.
   */
  async integrateLogs(due: string[], signer: Signer, fail: FailLog, witnessing: InstallationWitnessing | null): Promise<Plan[]> {
    if (due.length === 0) return [];
    const { store, log } = this.context;
    let heads: Map<string, number>;
    try {
      heads = await store.heads(due);
    } catch (error) {
      for (const tenant of due) fail(tenant, error);
      return [];
    }
    // Build on the newest checkpoint: at a load (a restart, another instance's log) or when another
    // instance signed further than this one. Each is verified before anything is built on it.
    const loading = due.filter((tenant) => {
      const state = this.states.of(tenant);
      return !state.loaded || (heads.get(tenant) ?? 0) > state.size;
    });
    await this.load(loading, heads, fail);

    const plans: Plan[] = [];
    // A head behind what this instance signed: FerretDB lost a raise to a concurrent one (it writes back
    // the whole document an update read, so of two `$max` at once the lower may win). Put it right.
    const raises = new Map<string, number>();
    await mapLimited(due, LOG_READS_IN_FLIGHT, async (tenant) => {
      const state = this.states.of(tenant);
      if (!state.loaded) return;
      if ((heads.get(tenant) ?? 0) < state.size) raises.set(tenant, state.size);
      if (state.storedTo <= state.size) return;
      try {
        const extension = extend(state.size, state.edges, await this.leaves(tenant, state));
        if (tenant === INSTALLATION && witnessing) await witnessing.check(extension.size, (size) => this.rootAt(tenant, state, extension, size));
        plans.push(planOf(this.context.name, tenant, state, extension, signer, this.context.clock.now()));
      } catch (error) {
        fail(tenant, error);
      }
    });

    const signed = await this.write(plans, fail);
    for (const plan of signed) raises.set(plan.tenant, plan.extension.size);
    try {
      await store.raiseHeads(raises, new Set(heads.keys()));
    } catch (error) {
      for (const plan of signed) fail(plan.tenant, error);
      return [];
    }
    const filled: { tenant: string; tile: string }[] = [];
    for (const { tenant, state, extension } of signed) {
      if (state.halted) log.warn({ tenant }, 'ledger integration resumed: the stored ledger state is sound again');
      state.halted = null;
      state.size = extension.size;
      state.edges = extension.edges;
      state.signedAt = this.states.now();
      // Signed here: the installation log's append floor follows, so the roll-up does not take the head
      // it just raised for another instance's progress and load the log again (it did, every round: on
      // FerretDB each load counted the new entries by a scan of all of them, a cost that grew with the
      // installation's age; test/ledger/roundReads.test.ts).
      if (tenant === INSTALLATION) this.entries.signedEntries = Math.max(this.entries.signedEntries ?? 0, extension.size);
      for (const seq of [...state.pending.keys()]) if (seq <= extension.size) state.pending.delete(seq);
      for (const { level, index } of extension.filled) filled.push({ tenant, tile: tileKey(tenant, level, index) });
    }
    // A failure leaves only garbage (partial tiles a full one serves too): logged.
    await store.deletePartialTiles(filled, TILE_WIDTH).catch((error: unknown) => {
      log.warn({ tiles: filled.length, error: describeDbError(error) }, 'could not delete the partial versions of full ledger tiles');
    });
    return signed;
  }

  /** The root of the log's tree of `size` leaves, where it is the loaded tree's, the new one's or an older one's. */
  private async rootAt(tenant: string, state: LogState, extension: Extension, size: number): Promise<Buffer> {
    if (size === extension.size) return edgeRoot(extension.edges);
    // Signed meanwhile by another instance, past what this one loaded: the next round loads it first.
    if (size > state.size) throw new LogBehind(`the installation tree of ${size} was signed elsewhere meanwhile`);
    return rootHash(new TileReader(this.context.store.forTenant(tenant)).nodes(state.size), size);
  }

  /**
   * Picks up the tree of each log's newest checkpoint (another instance's, or this one's before a
   * restart). The checkpoints the heads name are read at once; a log loaded afresh also gets a sorted
   * read, so that a head set back (or deleted) cannot make this instance build on an older tree than one
   * it can find signed.
   */
  async load(tenants: string[], heads: Map<string, number>, fail: FailLog): Promise<void> {
    if (tenants.length === 0) return;
    const { store, name, signer } = this.context;
    let named: Map<string, LedgerCheckpointDoc>;
    try {
      named = await store.checkpoints(tenants.filter((t) => heads.has(t)).map((t) => checkpointId(t, heads.get(t) ?? 0)));
    } catch (error) {
      for (const tenant of tenants) fail(tenant, error);
      return;
    }
    await mapLimited(tenants, LOG_READS_IN_FLIGHT, async (tenant) => {
      const state = this.states.of(tenant);
      try {
        let newest = named.get(checkpointId(tenant, heads.get(tenant) ?? 0)) ?? null;
        if (!state.loaded) {
          const sorted = await store.forTenant(tenant).newestBySize();
          if (sorted && sorted.size > (newest?.size ?? 0)) newest = sorted;
        }
        if (newest) verifyCheckpoint(name, signer, tenant, newest);
        // A log with no checkpoint stored whose checkpoints the installation log holds was wiped (its
        // events and ledger state deleted): its old checkpoints are witnessed, so a new history is refused.
        else if (tenant !== INSTALLATION && (await this.entries.hadCheckpoints(tenant))) {
          throw new LedgerHalt('the installation log holds checkpoints of this log, but none is stored: its ledger state was deleted (run `ledger audit`)');
        }
        // Known before anything is appended: no entry is ever written below it.
        if (tenant === INSTALLATION) this.entries.signedEntries = Math.max(this.entries.signedEntries ?? 0, newest?.size ?? 0);
        const size = newest?.size ?? 0;
        const reader = new TileReader(store.forTenant(tenant));
        const edges: Buffer[][] = [];
        let root: Buffer | null = null;
        try {
          for (let level = 0; entriesAt(size, level) > 0; level++) {
            const count = entriesAt(size, level);
            const width = count % TILE_WIDTH;
            edges.push(width === 0 ? [] : await reader.tile(level, Math.floor(count / TILE_WIDTH), width));
          }
          if (newest) root = await rootHash(reader.nodes(size), size);
        } catch (error) {
          if (!(error instanceof MissingTile)) throw error;
        }
        if (newest && !root?.equals(Buffer.from(newest.root, 'base64'))) throw new LedgerHalt(`the stored tiles do not give the root of the signed checkpoint of size ${size} (missing or changed)`);
        if (tenant === INSTALLATION) await this.entries.checkEntries(size, reader);
        state.size = size;
        state.edges = edges;
        state.loaded = true;
        if (size > state.storedTo) state.storedTo = size;
      } catch (error) {
        fail(tenant, error);
      }
    });
  }

  /** The leaf hashes of the log's next events (or entries), up to MAX_ROUND: those handed over, the others read back. */
  private async leaves(tenant: string, state: LogState): Promise<Buffer[]> {
    const to = Math.min(state.storedTo, state.size + MAX_ROUND);
    if (tenant === INSTALLATION) {
      // Entry index = seq − 1; `pending` holds the bodies of the entries appended here.
      return this.readLeaves(state, to, (seq) => {
        const body = state.pending.get(seq);
        return typeof body === 'string' ? leafHash(body) : undefined;
      }, async (from, upTo) => (await this.entries.ownEntries(from - 1, upTo - 1)).map((e) => ({ seq: e._id + 1, leaf: leafHash(e.body) })), 'installation log entry at seq');
    }
    return this.readLeaves(state, to, (seq) => {
      const hashes = state.pending.get(seq);
      if (hashes !== undefined && typeof hashes !== 'string') return eventLeafHash(tenant, seq, leafCommitOf(hashes));
      if (state.size === 0) {
        // No signed checkpoint anchors this log, and the events that begin it were not stored here.
        // A log is begun only by the instance that stores its first events; another instance (one that
        // merely serves a proof) leaves it to that one. Otherwise the ledger state was lost or the events
        // written behind the service's back: signing them now would seal whatever the database holds.
        // The instance that stored them may be about to sign them: it is given a while first.
        if (state.pending.size === 0 || this.states.now() - state.unanchoredSince < BEGIN_GRACE_MS) throw new NotBegunHere();
        throw new LedgerHalt(`events from sequence number ${seq} on are stored, but no signed checkpoint covers them and this instance did not store them: the ledger state is missing`);
      }
      return undefined;
    }, async (from, upTo) => this.ownLeaves(tenant, state, from, upTo, await this.context.store.forTenant(tenant).eventsBetween(from, upTo)), `event of ${tenant} at seq`);
  }

  /**
   * The leaves of the events read back from `from` on, as far as they run in sequence and are the
   * service's own (a valid MAC, db/rowMacs.ts). A foreign row is never signed. Past the last of the
   * service's own events (written behind its back at the next numbers, or further on), foreign rows are
   * moved aside, so that their numbers go to the service's own next events, and the log is signed up to
   * the number before them; so is a log asked for further than its events go. A foreign row with the
   * service's own events after it is one of them changed before it was signed: the log halts. One of its
   * own after a number that holds nothing is a gap (events deleted), retried and named by the audit.
   */
  private async ownLeaves(tenant: string, state: LogState, from: number, upTo: number, docs: StoredEvent[]): Promise<{ seq: number; leaf: Buffer }[]> {
    const { store, rowMac } = this.context;
    const leaves: { seq: number; leaf: Buffer }[] = [];
    const commits = docs.map((doc) => ownCommit(rowMac, doc));
    let lastOwn = -1;
    commits.forEach((commit, i) => {
      if (commit) lastOwn = i;
    });
    const ownAfter = (seq: number) => [...state.pending.keys()].some((pending) => pending > seq);
    for (const [i, doc] of docs.entries()) {
      const commit = commits[i] ?? null;
      const expected = from + leaves.length;
      if (commit && doc.seq === expected) {
        leaves.push({ seq: doc.seq, leaf: eventLeafHash(tenant, doc.seq, commit) });
        continue;
      }
      if (commit) throw new Error(`the event of ${tenant} at seq ${expected} is missing: a gap`);
      if (i < lastOwn || ownAfter(doc.seq)) {
        store.foreign.met(isTombstone(doc) ? 'tombstone' : 'event', doc, 'the ledger');
        throw new LedgerHalt(`the event at sequence number ${doc.seq} has no valid MAC and events of the service's are stored after it: it was changed behind the service's back before it was signed (run \`ledger audit\`)`);
      }
      await store.foreign.moveEventAside(doc, 'the ledger');
    }
    // Short of `upTo` (foreign rows moved aside, or asked for further than the events go): signed up to
    // the last own event, unless this instance stored later ones itself (a gap, then: retried).
    const end = from + leaves.length - 1;
    if (end < upTo && !ownAfter(end)) state.storedTo = Math.min(state.storedTo, end);
    return leaves;
  }

  /**
   * The leaves from just past the log's size to `to`: each from `known` when it has it, the others read
   * back `read` in runs of at most 1,000, which must hold every position in order (a gap is an error,
   * retried next round).
   */
  private async readLeaves(
    state: LogState,
    to: number,
    known: (seq: number) => Buffer | undefined,
    read: (from: number, to: number) => Promise<{ seq: number; leaf: Buffer }[]>,
    what: string,
  ): Promise<Buffer[]> {
    const leaves: Buffer[] = [];
    for (let seq = state.size + 1; seq <= to; seq++) {
      const leaf = known(seq);
      if (leaf) {
        leaves.push(leaf);
        continue;
      }
      const readTo = Math.min(to, seq + 999);
      const found = await read(seq, readTo);
      for (const [i, f] of found.entries()) {
        if (f.seq !== seq + i) throw new Error(`the ${what} ${seq + i} is missing: a gap`);
        leaves.push(f.leaf);
      }
      if (found.length !== readTo - seq + 1) {
        // Cut short on purpose: what followed was not the service's own (moved aside).
        if (state.storedTo < readTo) return leaves;
        throw new Error(`the ${what} ${seq}-${readTo} are not all stored`);
      }
      seq = readTo;
    }
    return leaves;
  }

  /** The round's writes: every plan's tiles in one insert, then the checkpoints of those whose tiles are all stored. Returns the plans signed. */
  private async write(plans: Plan[], fail: FailLog): Promise<Plan[]> {
    if (plans.length === 0) return [];
    const { store } = this.context;
    const tiles = plans.flatMap((plan) => plan.extension.tiles.map((tile) => ({ plan, doc: tileDoc(plan.tenant, tile) })));
    let refusedTiles: Set<number>;
    try {
      refusedTiles = await store.insertTiles(tiles.map((t) => t.doc));
    } catch (error) {
      for (const plan of plans) fail(plan.tenant, error);
      return [];
    }
    const tilesRefused = new Set([...refusedTiles].map((index) => (tiles[index] as (typeof tiles)[number]).plan));
    for (const plan of tilesRefused) fail(plan.tenant, new Error('the database refused a ledger tile'));
    const ready = plans.filter((plan) => !tilesRefused.has(plan));
    let outcome: { taken: Set<number>; refused: Set<number> };
    try {
      outcome = await store.insertCheckpoints(ready.map((plan) => plan.checkpoint));
    } catch (error) {
      for (const plan of ready) fail(plan.tenant, error);
      return [];
    }
    // Signed already, by another instance or before a restart: it must be this very tree.
    const taken = ready.filter((_, i) => outcome.taken.has(i));
    let stored = new Map<string, LedgerCheckpointDoc>();
    try {
      stored = await store.checkpoints(taken.map((plan) => plan.checkpoint._id));
    } catch (error) {
      for (const plan of taken) fail(plan.tenant, error);
      return ready.filter((_, i) => !outcome.taken.has(i) && !outcome.refused.has(i));
    }
    const signed: Plan[] = [];
    ready.forEach((plan, i) => {
      if (outcome.refused.has(i)) fail(plan.tenant, new Error('the database refused a ledger checkpoint'));
      else if (outcome.taken.has(i) && stored.get(plan.checkpoint._id)?.root !== plan.checkpoint.root) {
        fail(plan.tenant, new LedgerHalt(`the stored checkpoint of size ${plan.extension.size} has another root than the stored events give`));
      } else {
        if (!outcome.taken.has(i)) this.checkpointsSigned++;
        signed.push({ ...plan, fresh: !outcome.taken.has(i) });
      }
    });
    return signed;
  }
}
