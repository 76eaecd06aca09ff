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
import { consistencyProof, inclusionProof, leafHash, type NodeSource, rootHash } from '../domain/ledger/merkle';
import { checkpointText, leafJson } from '../domain/ledger/formats';
import { type Signer, signNote, type Verifier } from '../domain/ledger/note';
import type { Collections } from '../db/database';
import type { EventDoc, LedgerCheckpointDoc, LedgerTileDoc } from '../db/documents';
import { describeDbError, DUPLICATE_KEY, insertUnlessTaken, isDuplicateKey } from '../db/errors';
import { entriesAt, TileReader, tileDoc, tileKey, TILE_WIDTH, subtreeRoot } from './tiles';

/** Events integrated in one round of one organization; the rest waits for the next round. */
const MAX_ROUND = 20_000;
/** A log with nothing to integrate for this long is forgotten here (its edge tiles are some KiB each). */
const IDLE_MS = 60_000;

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
  /** Rounds that failed, and checkpoints refused because the stored tree disagreed (metrics). */
  readonly stats = { checkpoints: 0, failures: 0, conflicts: 0 };

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
      state.pending.set(doc.seq, eventHashOf(doc));
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
      state = { size: 0, edges: [], pending: new Map(), head: 0, loaded: false, busy: null, active: Date.now() };
      this.logs.set(tenant, state);
    }
    return state;
  }

  private tick(): void {
    const now = Date.now();
    for (const [tenant, state] of this.logs) {
      if (state.busy) continue;
      if (state.head > state.size) void this.integrate(tenant).catch(() => undefined);
      else if (now - state.active > IDLE_MS) this.logs.delete(tenant);
    }
  }

  /** Integrates whatever is known stored for `tenant` and signs the checkpoint; one round at a time. */
  integrate(tenant: string): Promise<void> {
    const state = this.state(tenant);
    state.busy ??= this.round(tenant, state)
      .catch((error: unknown) => {
        this.stats.failures++;
        state.loaded = false;
        this.log.error({ tenant, error: describeDbError(error) }, 'ledger integration failed; retried next round');
        throw error;
      })
      .finally(() => {
        state.busy = null;
      });
    return state.busy;
  }

  private async round(tenant: string, state: LogState): Promise<void> {
    const signer = this.options.signer;
    if (!signer) throw new Error('this process has no ledger signing key');
    const newest = await this.newestCheckpoint(tenant);
    if (!state.loaded || (newest && newest.size > state.size)) await this.load(tenant, state, newest);
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
    if (await insertUnlessTaken(this.c.ledgerCheckpoints, checkpoint, { writeConcern: { w: 'majority', j: true } })) this.stats.checkpoints++;
    else {
      // Signed already, by another instance or before a restart: it must be this very tree.
      const stored = await this.c.ledgerCheckpoints.findOne({ _id: checkpoint._id });
      if (stored?.root !== checkpoint.root) {
        this.stats.conflicts++;
        throw new Error(`the stored checkpoint of size ${size} has another root than the stored events give: run \`ledger audit\``);
      }
    }
    await this.raiseHead(tenant, size);
    state.size = size;
    state.edges = edges;
    for (const seq of [...state.pending.keys()]) if (seq <= size) state.pending.delete(seq);
    await this.deletePartialVersions(tenant, filled);
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
    for (let level = 0; entriesAt(size, level) > 0; level++) {
      const count = entriesAt(size, level);
      const width = count % TILE_WIDTH;
      edges.push(width === 0 ? [] : await reader.tile(level, Math.floor(count / TILE_WIDTH), width));
    }
    if (newest && !(await rootHash(reader.nodes(size), size)).equals(Buffer.from(newest.root, 'base64'))) {
      this.stats.conflicts++;
      throw new Error(`the stored tiles of ${tenant} do not give the root of its checkpoint ${size}: run \`ledger audit\``);
    }
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
   * The newest checkpoint that includes leaf `index`, waiting up to one interval for the next one,
   * and integrating here if the instance that should have did not (stopped, or gone).
   */
  async checkpointCovering(tenant: string, index: number): Promise<LedgerCheckpointDoc | null> {
    const deadline = Date.now() + this.options.intervalMs;
    for (;;) {
      const newest = await this.newestCheckpoint(tenant);
      if (newest && newest.size > index) return newest;
      if (Date.now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, Math.min(100, this.options.intervalMs)));
    }
    if (!this.options.signer) return null;
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
