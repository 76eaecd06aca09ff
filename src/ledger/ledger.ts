/**
 * The ledger: each organization's events, in sequence order, as the leaves of an RFC 6962 Merkle tree
 * (leaf index = seq − 1), stored as tiles, with signed checkpoints.
 *
 * Integration runs in the background, at most every LEDGER_CHECKPOINT_INTERVAL_MS per organization, on
 * the instance that writes the organization's events (it is handed them as they are stored; any it
 * was not handed, written elsewhere or before a restart, it reads back by sequence number). No request
 * waits for it. The tree is a function of the stored events alone, and every write is an insert of a
 * document whose id names its content (a tile at a width, a checkpoint at a size): two instances that
 * integrate the same organization write the same documents, and Ed25519 is deterministic, so they sign
 * the same checkpoints; the service can never sign two checkpoints that are inconsistent with each other
 * unless the stored events were changed behind its back, and then it refuses to sign.
 */
import { MongoServerError } from 'mongodb';
import type { Logger } from 'pino';
import { eventSha256OfParts } from '../domain/ledger/eventHash';
import { consistencyProof, inclusionProof, leafHash, type NodeSource, nodesOf, rootHash } from '../domain/ledger/merkle';
import { checkpointText, leafJson, parseCheckpoint, toBase64 } from '../domain/ledger/formats';
import { openNote, type Signer, signNote, type Verifier } from '../domain/ledger/note';
import type { Collections } from '../db/database';
import type { EventDoc, LedgerCheckpointDoc, LedgerTileDoc } from '../db/documents';
import { describeDbError, DUPLICATE_KEY, insertUnlessTaken, isDuplicateKey } from '../db/errors';
import { entriesAt, MissingTile, TileReader, tileDoc, tileKey, tilesOf, TILE_WIDTH, subtreeRoot } from './tiles';

/** Events integrated in one round of one organization; the rest waits for the next round. */
const MAX_ROUND = 20_000;
/** A log with nothing to integrate for this long is forgotten here (its edge tiles are some KiB each). */
const IDLE_MS = 60_000;
/** A halted log is looked at again this often: an operator's `ledger reseal` elsewhere resumes it. */
const HALT_RECHECK_MS = 30_000;
/** How long a proof request waits for the checkpoint that includes its event, whatever the interval. */
const MAX_PROOF_WAIT_MS = 3000;

/**
 * The ledger state of an organization cannot be trusted, so nothing more is signed for it: a stored
 * checkpoint that this installation's key did not sign, tiles that do not give a signed root, a stored
 * checkpoint with another root than the stored events give, or events that no signed checkpoint covers
 * and that this instance did not store itself (the ledger state was deleted, or the events written behind
 * the service's back). Only an operator's `ledger reseal` starts it again (README, "Trust model").
 */
export class LedgerHalt extends Error {
  override readonly name = 'LedgerHalt';
}

/** A log with no checkpoint yet whose first events were stored by another instance: that one begins it. */
class NotBegunHere extends Error {
  override readonly name = 'NotBegunHere';
}

export interface LedgerOptions {
  /** The key name (LEDGER_NAME); an organization's log is `<name>/<organization id>`. */
  name: string;
  /** Null where nothing is ever signed (the admin CLI). */
  signer: Signer | null;
  intervalMs: number;
}

/** What a write answers about each event: its place in the log and the hash the leaf commits to. */
export interface Receipt {
  leaf_index: number;
  event_sha256: string;
}

interface LogState {
  /** Leaves integrated: the size of the newest checkpoint this instance signed or loaded. */
  size: number;
  /** Per tile level, the hashes of the partial tile at the tree's right edge. */
  edges: Buffer[][];
  /**
   * The event hashes (hex) of events stored here and not integrated yet, by seq: not the documents,
   * which would otherwise live a second longer than their request and burden the GC. Their leaves
   * are hashed by the round; their receipts read the hash from here.
   */
  pending: Map<number, string>;
  /** The highest seq known stored. */
  head: number;
  loaded: boolean;
  busy: Promise<void> | null;
  /** When events were last handed over (ms): a log idle for IDLE_MS is dropped, and reloaded when needed. */
  active: number;
  /** Why nothing more is signed for this log (LedgerHalt), and since when (ms); null while it integrates. */
  halted: { reason: string; at: number } | null;
}

/** The SHA-256 of the event's canonical JSON. */
export function eventHashOf(doc: EventDoc): string {
  return eventSha256OfParts(
    {
      id: doc._id, timestamp: doc.ts.toISOString(), actor_id: doc.actor_id, actor_name: doc.actor_name, actor_email: doc.actor_email,
      action: doc.action, resource_type: doc.resource_type, resource_id: doc.resource_id, resource_name: doc.resource_name,
      organization_id: doc.organization_id, api_key_id: doc.api_key_id,
    },
    doc.metadata,
  );
}

/** The leaf hash of the event at `seq` of `tenant`'s log whose event hash is `eventHash`. */
export function leafHashAt(tenant: string, seq: number, eventHash: string): Buffer {
  return leafHash(leafJson(tenant, seq, eventHash));
}

export function leafHashOf(doc: EventDoc): Buffer {
  return leafHashAt(doc.tenant, doc.seq, eventHashOf(doc));
}

export class Ledger {
  private readonly logs = new Map<string, LogState>();
  private timer: NodeJS.Timeout | null = null;
  private readonly counts = { checkpoints: 0, failures: 0, conflicts: 0 };

  /** Checkpoints signed, rounds failed, halts (counted each time a log halts), and the logs halted now (metrics). */
  get stats(): { checkpoints: number; failures: number; conflicts: number; halted: number } {
    let halted = 0;
    for (const state of this.logs.values()) if (state.halted) halted++;
    return { ...this.counts, halted };
  }

  constructor(
    private readonly c: Collections,
    private readonly options: LedgerOptions,
    private readonly log: Logger,
  ) {}

  get verifier(): Verifier | null {
    return this.options.signer;
  }

  origin(tenant: string): string {
    return `${this.options.name}/${tenant}`;
  }

  start(): void {
    this.timer ??= setInterval(() => { this.tick(); }, this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops the cadence and integrates what was stored here, once. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await Promise.all([...this.logs.keys()].map((tenant) => this.integrate(tenant).catch(() => undefined)));
  }

  /** Told by the writer about events it stored. */
  stored(docs: readonly EventDoc[]): void {
    for (const doc of docs) {
      const state = this.state(doc.tenant);
      state.active = Date.now();
      // A halted log keeps nothing more in memory: once resealed, it reads its events back.
      if (!state.halted) state.pending.set(doc.seq, eventHashOf(doc));
      if (doc.seq > state.head) state.head = doc.seq;
    }
  }

  /**
   * What a write answers about a stored event. An event stored here is hashed once: its hash waits
   * in `pending` (a tenant's seq names one event); others (a replay, an event stored by another
   * instance) are hashed now.
   */
  receipt(doc: EventDoc): Receipt {
    return { leaf_index: doc.seq - 1, event_sha256: this.logs.get(doc.tenant)?.pending.get(doc.seq) ?? eventHashOf(doc) };
  }

  private state(tenant: string): LogState {
    let state = this.logs.get(tenant);
    if (!state) {
      state = { size: 0, edges: [], pending: new Map(), head: 0, loaded: false, busy: null, active: Date.now(), halted: null };
      this.logs.set(tenant, state);
    }
    return state;
  }

  private tick(): void {
    const now = Date.now();
    for (const [tenant, state] of this.logs) {
      if (state.busy) continue;
      if (state.halted) {
        if (now - state.halted.at >= HALT_RECHECK_MS) {
          state.loaded = false;
          void this.integrate(tenant, true).catch(() => undefined);
        }
      } else if (state.head > state.size) void this.integrate(tenant).catch(() => undefined);
      else if (now - state.active > IDLE_MS) this.logs.delete(tenant);
    }
  }

  /**
   * Integrates whatever is known stored for `tenant` and signs the checkpoint; one round at a time.
   * A halted log is left alone, but for `recheck` (its periodic look: resumed if its state is sound again).
   */
  integrate(tenant: string, recheck = false): Promise<void> {
    const state = this.state(tenant);
    if (state.halted && !recheck) return Promise.resolve();
    state.busy ??= this.round(tenant, state)
      .then(() => {
        if (state.halted) this.log.warn({ tenant }, 'ledger integration resumed: the stored ledger state is sound again');
        state.halted = null;
      })
      .catch((error: unknown) => {
        state.loaded = false;
        if (error instanceof NotBegunHere) return;
        if (error instanceof LedgerHalt) {
          this.halt(tenant, state, error.message);
          return;
        }
        this.counts.failures++;
        this.log.error({ tenant, error: describeDbError(error) }, 'ledger integration failed; retried next round');
        throw error;
      })
      .finally(() => {
        state.busy = null;
      });
    return state.busy;
  }

  /** Stops integrating `tenant`: logged at error level and counted when it starts, or for another reason. */
  private halt(tenant: string, state: LogState, reason: string): void {
    if (state.halted?.reason !== reason) {
      this.counts.conflicts++;
      this.log.error({ tenant, reason }, 'ledger integration HALTED for this organization: nothing more is signed for it until an operator runs `ledger reseal` (run `ledger audit` first)');
    }
    state.halted = { reason, at: Date.now() };
  }

  /** Why `tenant`'s log is halted on this instance, or null. */
  haltedReason(tenant: string): string | null {
    return this.logs.get(tenant)?.halted?.reason ?? null;
  }

  private async round(tenant: string, state: LogState): Promise<void> {
    const signer = this.options.signer;
    if (!signer) throw new Error('this process has no ledger signing key');
    let newest = await this.newestCheckpoint(tenant);
    if (!state.loaded) newest = await this.newestSigned(tenant, newest);
    // Verified when it is to be built upon: a checkpoint this instance signed or loaded is in memory already.
    if (!state.loaded || (newest && newest.size > state.size)) {
      if (newest) this.verify(tenant, newest);
      await this.load(tenant, state, newest);
    }
    // A head behind what this instance signed: FerretDB lost a raise to a concurrent one (it writes back
    // the whole document an update read, so of two `$max` at once the lower may win). Put it right.
    else if ((newest?.size ?? 0) < state.size) await this.raiseHead(tenant, state.size);
    if (state.head <= state.size) return;

    const from = state.size;
    const to = Math.min(state.head, from + MAX_ROUND);
    const leaves = await this.leavesBetween(tenant, state, from, to);
    const reader = new TileReader(this.c, tenant);
    const edges = state.edges.map((edge) => [...edge]);
    const writes: LedgerTileDoc[] = [];
    // Tiles this round fills that an earlier checkpoint left partial: their partial versions go once it is signed.
    const filled: string[] = [];
    let size = from;
    for (const leaf of leaves) {
      size++;
      let carry = leaf;
      for (let level = 0; ; level++) {
        const edge = (edges[level] ??= []);
        edge.push(carry);
        if (edge.length < TILE_WIDTH) break;
        const index = entriesAt(size, level) / TILE_WIDTH - 1;
        writes.push(tileDoc(tenant, level, index, edge));
        if (entriesAt(from, level) > index * TILE_WIDTH) filled.push(tileKey(tenant, level, index));
        reader.remember(level, index, edge);
        carry = subtreeRoot(edge);
        edges[level] = [];
      }
    }
    edges.forEach((edge, level) => {
      if (edge.length === 0) return;
      const index = Math.floor(entriesAt(size, level) / TILE_WIDTH);
      writes.push(tileDoc(tenant, level, index, edge));
      reader.remember(level, index, edge);
    });
    await this.insertIgnoringDuplicates(writes);

    const root = await rootHash(reader.nodes(size), size);
    const note = signNote(checkpointText({ origin: this.origin(tenant), size, root }), signer);
    const checkpoint: LedgerCheckpointDoc = { _id: `${tenant}/${size}`, tenant, size, root: root.toString('base64'), note, created_at: new Date() };
    if (await insertUnlessTaken(this.c.ledgerCheckpoints, checkpoint, { writeConcern: { w: 'majority', j: true } })) this.counts.checkpoints++;
    else {
      // Signed already, by another instance or before a restart: it must be this very tree.
      const stored = await this.c.ledgerCheckpoints.findOne({ _id: checkpoint._id });
      if (stored?.root !== checkpoint.root) throw new LedgerHalt(`the stored checkpoint of size ${size} has another root than the stored events give`);
    }
    await this.raiseHead(tenant, size);
    state.size = size;
    state.edges = edges;
    for (const seq of [...state.pending.keys()]) if (seq <= size) state.pending.delete(seq);
    await this.deletePartialVersions(tenant, filled);
  }

  /**
   * The operator's way out of a halt (`ledger reseal`): rebuilds the log's tiles from its stored events
   * and signs their tree, but only as an extension of the newest checkpoint this key signed that can be
   * found: the events must still give that checkpoint's root, or nothing is written. Checkpoint documents
   * this key did not sign are deleted. With no signed checkpoint at all, the stored events are sealed as
   * they are: that is the operator's decision, and it is logged. Holds every leaf hash in memory (32 bytes
   * and a Buffer's overhead per event).
   */
  async reseal(tenant: string): Promise<{ anchor: number | null; size: number; planted: number }> {
    const signer = this.options.signer;
    if (!signer) throw new Error('resealing needs the ledger signing key');
    let anchor: LedgerCheckpointDoc | null = null;
    const planted: string[] = [];
    for await (const doc of this.c.ledgerCheckpoints.find({ tenant }).sort({ size: -1 })) {
      try {
        this.verify(tenant, doc);
        anchor = doc;
        break;
      } catch {
        planted.push(doc._id);
      }
    }
    const leaves: Buffer[] = [];
    for await (const doc of this.c.events.find({ tenant }).sort({ seq: 1 })) {
      if (doc.seq !== leaves.length + 1) break;
      leaves.push(leafHashOf(doc));
    }
    const size = leaves.length;
    if (anchor) {
      if (size < anchor.size) throw new LedgerHalt(`only events 1 to ${size} are stored in sequence, and the signed checkpoint of size ${anchor.size} needs every one of its events: restore them first`);
      if (!(await rootHash(nodesOf(leaves), anchor.size)).equals(Buffer.from(anchor.root, 'base64'))) {
        throw new LedgerHalt(`the stored events no longer give the root of the signed checkpoint of size ${anchor.size}: restore them first (\`ledger audit\` names them)`);
      }
    }
    if (size === 0) throw new LedgerHalt('the organization has no events to seal');
    const durable = { writeConcern: { w: 'majority' as const, j: true } };
    if (planted.length) await this.c.ledgerCheckpoints.deleteMany({ _id: { $in: planted } }, durable);
    const tiles = new Map<string, LedgerTileDoc>();
    for (const treeSize of [anchor?.size ?? 0, size]) for (const doc of tilesOf(tenant, leaves, treeSize)) tiles.set(doc._id, doc);
    for (const doc of tiles.values()) await this.c.ledgerTiles.replaceOne({ _id: doc._id }, doc, { upsert: true, ...durable });
    const root = await rootHash(nodesOf(leaves), size);
    const note = signNote(checkpointText({ origin: this.origin(tenant), size, root }), signer);
    const checkpoint: LedgerCheckpointDoc = { _id: `${tenant}/${size}`, tenant, size, root: root.toString('base64'), note, created_at: new Date() };
    await this.c.ledgerCheckpoints.replaceOne({ _id: checkpoint._id }, checkpoint, { upsert: true, ...durable });
    // Set, not raised: a head planted above every checkpoint would otherwise stay.
    await this.c.ledgerHeads.updateOne({ _id: tenant }, { $set: { size } }, { upsert: true, ...durable });
    this.logs.delete(tenant);
    this.log.warn({ tenant, anchor: anchor?.size ?? null, size, planted: planted.length }, 'ledger RESEALED by an operator from the stored events');
    return { anchor: anchor?.size ?? null, size, planted: planted.length };
  }

  /**
   * Deletes the partial versions of tiles now full: the full tile's prefix serves every tree they
   * served (TileReader falls back to it). Without this, a log growing by a few events per round would
   * keep a partial tile per round, some KiB each, for ever. A failure leaves only garbage: logged.
   */
  private async deletePartialVersions(tenant: string, tiles: string[]): Promise<void> {
    for (const tile of tiles) {
      await this.c.ledgerTiles.deleteMany({ tenant, tile, width: { $lt: TILE_WIDTH } }).catch((error: unknown) => {
        this.log.warn({ tenant, tile, error: describeDbError(error) }, 'could not delete the partial versions of a full ledger tile');
      });
    }
  }

  /** Picks up the tree of the newest checkpoint (another instance's, or this one's before a restart). */
  private async load(tenant: string, state: LogState, newest: LedgerCheckpointDoc | null): Promise<void> {
    const size = newest?.size ?? 0;
    const reader = new TileReader(this.c, tenant);
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
    state.size = size;
    state.edges = edges;
    state.loaded = true;
    if (size > state.head) state.head = size;
  }

  /** The leaf hashes of events (from, to] in order: those handed over, the others read back by sequence number. */
  private async leavesBetween(tenant: string, state: LogState, from: number, to: number): Promise<Buffer[]> {
    const leaves: Buffer[] = [];
    for (let seq = from + 1; seq <= to; seq++) {
      const eventHash = state.pending.get(seq);
      if (eventHash) {
        leaves.push(leafHashAt(tenant, seq, eventHash));
        continue;
      }
      if (state.size === 0) {
        // No signed checkpoint anchors this log, and the events that begin it were not stored here.
        // A log is begun only by the instance that stores its first events; another instance (one that
        // merely serves a proof) leaves it to that one. Otherwise the ledger state was lost or the events
        // written behind the service's back: signing them now would seal whatever the database holds.
        if (state.pending.size === 0) throw new NotBegunHere();
        throw new LedgerHalt(`events from sequence number ${seq} on are stored, but no signed checkpoint covers them and this instance did not store them: the ledger state is missing`);
      }
      const missingTo = Math.min(to, seq + 999);
      const read = await this.c.events.find({ tenant, seq: { $gte: seq, $lte: missingTo } }).sort({ seq: 1 }).toArray();
      for (const [i, found] of read.entries()) {
        if (found.seq !== seq + i) throw new Error(`event ${seq + i} of ${tenant} is missing: the sequence has a gap`);
        leaves.push(leafHashOf(found));
      }
      if (read.length !== missingTo - seq + 1) throw new Error(`events ${seq}-${missingTo} of ${tenant} are not all stored`);
      seq = missingTo;
    }
    return leaves;
  }

  private async insertIgnoringDuplicates(docs: LedgerTileDoc[]): Promise<void> {
    if (docs.length === 0) return;
    try {
      await this.c.ledgerTiles.insertMany(docs, { ordered: false, writeConcern: { w: 'majority', j: true } });
    } catch (error) {
      const codes = error instanceof MongoServerError && 'writeErrors' in error ? [error.writeErrors].flat().map((e) => (e as { code?: number }).code) : [];
      if (codes.length === 0 || codes.some((code) => code !== DUPLICATE_KEY)) throw error;
    }
  }

  /** Moves the log's head up to `size` (never down: instances may finish rounds out of order). */
  private async raiseHead(tenant: string, size: number): Promise<void> {
    const raise = () => this.c.ledgerHeads.updateOne({ _id: tenant }, { $max: { size } }, { upsert: true, writeConcern: { w: 'majority', j: true } });
    try {
      await raise();
    } catch (error) {
      // Two first upserts at once (FerretDB's upsert is not atomic): the loser's insert was refused
      // because the document now exists, so the second try updates it.
      if (!isDuplicateKey(error)) throw error;
      await raise();
    }
  }

  /**
   * Throws LedgerHalt unless `doc` is a checkpoint of `tenant`'s log that this installation's key
   * signed, with the size and root its document says: a document written by someone else is never
   * built upon.
   */
  private verify(tenant: string, doc: LedgerCheckpointDoc): void {
    const signer = this.options.signer;
    if (!signer) return;
    try {
      const signed = parseCheckpoint(openNote(doc.note, signer));
      if (signed.origin === this.origin(tenant) && signed.size === doc.size && toBase64(signed.root) === doc.root && doc._id === `${tenant}/${doc.size}`) return;
    } catch {
      // not signed by this key: refused below
    }
    throw new LedgerHalt(`the stored checkpoint of size ${doc.size} is not one this installation's key signed for this log`);
  }

  /**
   * The newest checkpoint stored, found by a sorted read rather than through the head document alone,
   * when a log is loaded: a head set back (or deleted) must not make this instance build on an older
   * tree than one it can find signed. Costs one sorted read per load (FerretDB: a scan of the log's checkpoints).
   */
  private async newestSigned(tenant: string, viaHead: LedgerCheckpointDoc | null): Promise<LedgerCheckpointDoc | null> {
    const sorted = await this.c.ledgerCheckpoints.findOne({ tenant }, { sort: { size: -1 } });
    return sorted && sorted.size > (viaHead?.size ?? 0) ? sorted : viaHead;
  }

  /** The newest checkpoint: two point reads, the head and the checkpoint it names. */
  async newestCheckpoint(tenant: string): Promise<LedgerCheckpointDoc | null> {
    const head = await this.c.ledgerHeads.findOne({ _id: tenant });
    if (head) return this.checkpointOfSize(tenant, head.size);
    // No head: nothing signed yet, or signed before heads existed. The sorted read, once: its answer becomes the head.
    const newest = await this.c.ledgerCheckpoints.findOne({ tenant }, { sort: { size: -1 } });
    if (newest) await this.raiseHead(tenant, newest.size);
    return newest;
  }

  checkpointOfSize(tenant: string, size: number): Promise<LedgerCheckpointDoc | null> {
    return this.c.ledgerCheckpoints.findOne({ _id: `${tenant}/${size}` });
  }

  /**
   * The newest checkpoint that includes leaf `index`, waiting up to one interval (at most
   * MAX_PROOF_WAIT_MS) for the next one, and integrating here if the instance that should have did not
   * (stopped, gone, or on a long interval). Null for a halted log.
   */
  async checkpointCovering(tenant: string, index: number): Promise<LedgerCheckpointDoc | null> {
    const deadline = Date.now() + Math.min(this.options.intervalMs, MAX_PROOF_WAIT_MS);
    for (;;) {
      const newest = await this.newestCheckpoint(tenant);
      if (newest && newest.size > index) return newest;
      if (Date.now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, Math.min(100, this.options.intervalMs)));
    }
    if (!this.options.signer || this.haltedReason(tenant)) return null;
    const state = this.state(tenant);
    if (state.head < index + 1) state.head = index + 1;
    await this.integrate(tenant);
    const newest = await this.newestCheckpoint(tenant);
    return newest && newest.size > index ? newest : null;
  }

  /** The tree of `size` leaves of `tenant`'s log, for many proofs in a row. */
  nodes(tenant: string, size: number): NodeSource {
    return new TileReader(this.c, tenant).nodes(size);
  }

  async inclusion(tenant: string, index: number, size: number): Promise<Buffer[]> {
    return inclusionProof(this.nodes(tenant, size), index, size);
  }

  async consistency(tenant: string, from: number, to: number): Promise<Buffer[]> {
    return consistencyProof(this.nodes(tenant, to), from, to);
  }
}
