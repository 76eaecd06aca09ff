/**
 * The ledger's write side: each organization's events, in sequence order, become the leaves of an RFC
 * 6962 Merkle tree (leaf index = seq − 1), stored as tiles, with signed checkpoints.
 *
 * Integration runs in the background on the instance that writes an organization's events (it is
 * handed them as they are stored; any it was not handed, written elsewhere or before a restart, it
 * reads back by sequence number). No request waits for it. Every LEDGER_CHECKPOINT_INTERVAL_MS, one
 * round integrates every organization with something to integrate: one read of their heads, one
 * insert of all their tiles, one of all their checkpoints, one write raising the heads, whether one
 * organization is due or a thousand. What fails for one organization (a refused document, a halt, a
 * missing event) stays with it; the others' round goes on.
 *
 * The tree is a function of the stored events alone, and every write is an insert of a document whose
 * id names its content (a tile at a width, a checkpoint at a size): two instances that integrate the
 * same organization write the same documents, and Ed25519 is deterministic, so they sign the same
 * checkpoints. The service never signs two checkpoints inconsistent with each other unless the stored
 * events were changed behind its back, and then it refuses to sign (a halt: README, "Trust model").
 */
import type { Logger } from 'pino';
import { checkpointProblem } from '../domain/ledger/checkpoint';
import { eventLeafHash, type EventHashes, leafCommitOf } from '../domain/ledger/eventHash';
import { checkpointText } from '../domain/ledger/formats';
import { leafHash, nodesOf, rootHash } from '../domain/ledger/merkle';
import { signNote, type Signer } from '../domain/ledger/note';
import { edgeRoot, entriesAt, extend, type Extension, tileKey, tilesOf, TILE_WIDTH } from '../domain/ledger/tiles';
import { checkpointBody } from '../domain/ledger/witnessFormats';
import { mapLimited } from '../domain/limited';
import type { Clock } from '../domain/time';
import { type EventDoc, eventHashesOfDoc, isTombstone, leafCommitOfStored, type LedgerCheckpointDoc, type LedgerEntryDoc, type StoredEvent } from '../db/documents';
import { isOwnEntry, isOwnStored, rowMacOf, sealEntry } from '../db/rowMacs';
import type { LeafCommit } from '../domain/ledger/formats';
import { RowMac } from '../domain/ledger/rowMac';
import { describeDbError } from '../db/errors';
import { checkpointId, type LedgerStore, tileDoc } from '../db/ledgerStore';
import { MissingTile, TileReader } from './tileReader';

/** Events integrated for one organization in one round; the rest waits for the next round. */
const MAX_ROUND = 20_000;
/**
 * Logs integrated in one round, besides those a reader asks for. A round's cost on the database grows
 * with the logs it signs (each is a tile, a checkpoint and a head), not with their events: with a
 * thousand organizations writing an event now and then, signing all of them every second took 40% of
 * ingest on FerretDB. Past this many, each log is signed every few intervals ("at most every interval"),
 * and a proof that needs a newer checkpoint asks for its log.
 */
const MAX_LOGS_PER_ROUND = 100;
/** A log with nothing to integrate for this long is forgotten here (its edge tiles are some KiB each). */
const IDLE_MS = 60_000;
/**
 * How long an instance that stored events of a log no checkpoint anchors yet, but not its first ones,
 * waits for the instance that stored those to begin it (a writer change between instances, or two
 * writing at once) before it takes the ledger state for lost.
 */
const BEGIN_GRACE_MS = 60_000;
/** A halted log is looked at again this often: an operator's `ledger reseal` elsewhere resumes it. */
const HALT_RECHECK_MS = 30_000;
/** Logs whose reads (a load, events read back) run at once in a round. */
const LOG_READS_IN_FLIGHT = 8;

/**
 * The ledger state of an organization cannot be trusted, so nothing more is signed for it: a stored
 * checkpoint that this installation's key did not sign, tiles that do not give a signed root, a stored
 * checkpoint with another root than the stored events give, or events that no signed checkpoint covers
 * and that this instance did not store itself (the ledger state was deleted, or the events written behind
 * the service's back). Only an operator's `ledger reseal` starts it again.
 */
export class LedgerHalt extends Error {
  override readonly name = 'LedgerHalt';
}

/** Another instance signed further than this one loaded: not a failure, the next round loads its tree. */
export class LogBehind extends Error {
  override readonly name = 'LogBehind';
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
  /** Logs a round signs besides those asked for (default MAX_LOGS_PER_ROUND). */
  logsPerRound?: number;
}

/**
 * What a write answers about each event: its sequence number (what people are shown), its leaf index
 * (seq − 1, the tree position proofs use) and the hash the leaf commits to.
 */
export interface Receipt extends EventHashes {
  seq: number;
  leaf_index: number;
}

/**
 * The installation log's tenant: its entries are the organizations' checkpoint bodies, its origin
 * `<name>/installation`. Organization ids begin with `org_`, so no organization has this one.
 */
export const INSTALLATION = 'installation';

/**
 * What the installation log asks of the witnesses: `check` before it signs a tree (throws LedgerHalt
 * when a witness holds a history this tree does not extend: an alarm), `signed` once it signed one here.
 */
export interface InstallationWitnessing {
  check(size: number, rootAt: (size: number) => Promise<Buffer>): Promise<void>;
  signed(checkpoint: LedgerCheckpointDoc): void;
}

/** An organization checkpoint waiting to be appended to the installation log. */
interface Unrolled {
  tenant: string;
  checkpoint: string;
  body: string;
}

/** The origin line of `tenant`'s log in an installation whose ledger is called `name`. */
export function logOrigin(name: string, tenant: string): string {
  return `${name}/${tenant}`;
}

/**
 * What an installation entry's `tenant` and `checkpoint` fields must be, from its body (an organization
 * checkpoint's origin, size and root lines) in the installation whose ledger is `name`; null when the
 * body is not a checkpoint body of one of its organizations' logs.
 */
export function entryFieldsOfBody(name: string, body: string): { tenant: string; checkpoint: string } | null {
  const lines = body.split('\n');
  const [origin = '', size = ''] = lines;
  const prefix = `${name}/`;
  if (lines.length !== 4 || lines[3] !== '' || !origin.startsWith(prefix) || !/^(0|[1-9][0-9]{0,15})$/.test(size)) return null;
  const tenant = origin.slice(prefix.length);
  if (tenant === '' || tenant === INSTALLATION || tenant.includes('/')) return null;
  return { tenant, checkpoint: checkpointId(tenant, Number(size)) };
}

/** Whether `entry`'s leaf is the one the installation tree of `size` signed at its index (read from the tiles `reader` reads). */
export async function signedLeafIs(reader: TileReader, size: number, entry: LedgerEntryDoc): Promise<boolean> {
  const index = entry._id;
  if (!Number.isInteger(index) || index < 0 || index >= size || typeof entry.body !== 'string') return false;
  const tile = Math.floor(index / TILE_WIDTH);
  try {
    const hashes = await reader.tile(0, tile, Math.min(TILE_WIDTH, size - tile * TILE_WIDTH));
    return hashes[index % TILE_WIDTH]?.equals(leafHash(entry.body)) ?? false;
  } catch (error) {
    if (error instanceof MissingTile) return false;
    throw error;
  }
}

interface LogState {
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

/** One log's part of a round, once its leaves are hashed: what it will write. */
interface Plan {
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

export class LedgerIntegrator {
  private readonly logs = new Map<string, LogState>();
  private timer: NodeJS.Timeout | null = null;
  private readonly counts = { checkpoints: 0, failures: 0, conflicts: 0 };
  /** Rounds that signed something, and the time they spent on the organizations' logs and on the installation log's part. */
  private readonly timing = { rounds: 0, organizationMs: 0, installationMs: 0 };
  /** The round running now, and the one asked for while it runs (it starts when this one ends). */
  private current: Promise<Map<string, Error>> | null = null;
  private queued: Promise<Map<string, Error>> | null = null;
  /** Logs a round must look at even with nothing new: halted ones to recheck, ones a reader asked for. */
  private readonly asked = new Set<string>();
  /** Organization checkpoints signed here and not yet entries of the installation log. */
  private readonly unrolled: Unrolled[] = [];
  /** The installation log's next free entry index as this instance last saw it (null: not known yet). */
  private nextEntry: number | null = null;
  /**
   * The size of the installation log's newest checkpoint this key signed, as last loaded (null: not
   * loaded yet). No entry is ever written below it: entries are appended only once it is known.
   */
  private signedEntries: number | null = null;
  /** Entries below this index were counted present when the installation log was loaded. */
  private entriesCounted = 0;
  /** Whether the entries written before MACs existed were looked for since this process started (the upgrade). */
  private entriesUpgraded = false;
  /** Set by the composition root when the installation has witnesses. */
  witnessing: InstallationWitnessing | null = null;

  /** Checks that the rows read back are the service's own (null: this process signs nothing). */
  private readonly rowMac: RowMac | null;

  constructor(
    private readonly store: LedgerStore,
    private readonly options: LedgerOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.rowMac = options.signer ? RowMac.fromSigner(options.signer) : null;
  }

  /** Checkpoints signed, rounds failed, halts (counted each time a log halts), and the logs halted now (metrics). */
  get stats(): { checkpoints: number; failures: number; conflicts: number; halted: number; rounds: number; organizationMs: number; installationMs: number } {
    let halted = 0;
    for (const state of this.logs.values()) if (state.halted) halted++;
    return { ...this.counts, halted, ...this.timing };
  }

  origin(tenant: string): string {
    return logOrigin(this.options.name, tenant);
  }

  start(): void {
    // The first round loads the installation log whatever happens: it checks its signed entries are all
    // there and gives entries written before MACs existed theirs (load, checkEntries).
    if (!this.timer) this.asked.add(INSTALLATION);
    this.timer ??= setInterval(() => { this.tick(); }, this.options.intervalMs);
    this.timer.unref();
  }

  /** Stops the cadence and integrates what was stored here: rounds, as long as each one signs something. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (let signed = -1; signed !== this.counts.checkpoints && this.waiting(); ) {
      signed = this.counts.checkpoints;
      await this.nextRound().catch(() => undefined);
    }
  }

  /** Whether some log that is not halted has events to integrate. */
  private waiting(): boolean {
    if (this.unrolled.length > 0) return true;
    for (const state of this.logs.values()) if (!state.halted && state.storedTo > state.size) return true;
    return false;
  }

  /** Told by the writer about events it stored, with their hashes (the writer computed them to seal each event). */
  stored(docs: readonly EventDoc[], hashes: readonly EventHashes[]): void {
    const now = this.now();
    for (const [i, doc] of docs.entries()) {
      const state = this.state(doc.tenant);
      state.active = now;
      // A halted log keeps nothing more in memory: once resealed, it reads its events back.
      if (!state.halted) state.pending.set(doc.seq, hashes[i] ?? eventHashesOfDoc(doc));
      if (state.size === 0 && state.unanchoredSince === 0) state.unanchoredSince = now;
      if (doc.seq > state.storedTo) state.storedTo = doc.seq;
    }
  }

  /**
   * What a write answers about a stored event. An event stored here is hashed once: its hash waits in
   * `pending` (a tenant's seq names one event); others (a replay, an event stored elsewhere) are hashed now.
   */
  receipt(doc: EventDoc): Receipt {
    const known = this.logs.get(doc.tenant)?.pending.get(doc.seq);
    return { seq: doc.seq, leaf_index: doc.seq - 1, ...(known !== undefined && typeof known !== 'string' ? known : eventHashesOfDoc(doc)) };
  }

  /**
   * Appends an organization checkpoint that no installation entry holds (signed by an instance that
   * stopped before appending it) and integrates the installation log.
   */
  async rollUp(checkpoint: LedgerCheckpointDoc): Promise<void> {
    // Only a checkpoint of an organization's log that this key signed: a document planted in the database
    // never becomes an entry (which the installation checkpoint would sign).
    try {
      if (checkpoint.tenant === INSTALLATION) throw new LedgerHalt('an installation checkpoint is no entry of its own log');
      this.verify(checkpoint.tenant, checkpoint);
    } catch (error) {
      this.log.error({ tenant: checkpoint.tenant, checkpoint: checkpoint._id, reason: (error as Error).message }, 'a stored checkpoint was not appended to the installation log: this key did not sign it for its log');
      return;
    }
    if (!this.unrolled.some((u) => u.checkpoint === checkpoint._id)) this.unrolled.push({ tenant: checkpoint.tenant, checkpoint: checkpoint._id, body: checkpointBody(checkpoint.note) });
    await this.integrate(INSTALLATION);
  }

  /** Stops signing the installation log at once: a witness raised an alarm. */
  haltInstallation(reason: string): void {
    this.halt(INSTALLATION, this.state(INSTALLATION), reason);
  }

  /** Why `tenant`'s log is halted on this instance, or null. */
  haltedReason(tenant: string): string | null {
    return this.logs.get(tenant)?.halted?.reason ?? null;
  }

  /**
   * Integrates `tenant`'s log now, up to at least `storedTo` (a reader waiting for a checkpoint that
   * the instance that should have signed did not), together with every other log due. `recheck`: look
   * at a halted log again (it resumes if its state is sound). Rejects with that log's failure.
   */
  async integrate(tenant: string, options: { storedTo?: number; recheck?: boolean } = {}): Promise<void> {
    if (!this.options.signer) throw new Error('this process has no ledger signing key');
    const state = this.state(tenant);
    if (state.halted && !options.recheck) return;
    if (options.storedTo !== undefined && options.storedTo > state.storedTo) state.storedTo = options.storedTo;
    this.asked.add(tenant);
    const failure = (await this.nextRound()).get(tenant);
    if (failure !== undefined) throw failure;
  }

  private now(): number {
    return this.clock.now().getTime();
  }

  private state(tenant: string): LogState {
    let state = this.logs.get(tenant);
    if (!state) {
      state = { size: 0, edges: [], pending: new Map(), storedTo: 0, loaded: false, active: this.now(), signedAt: 0, halted: null, unanchoredSince: 0 };
      this.logs.set(tenant, state);
    }
    return state;
  }

  private tick(): void {
    if (this.current || this.queued) return;
    const now = this.now();
    for (const [tenant, state] of this.logs) {
      if (state.halted) {
        if (now - state.halted.at >= HALT_RECHECK_MS) this.asked.add(tenant);
      } else if (tenant !== INSTALLATION && state.storedTo <= state.size && now - state.active > IDLE_MS) this.logs.delete(tenant);
    }
    void this.nextRound().catch(() => undefined);
  }

  /** A round that starts after this call: the running one's successor, shared by everyone who asks meanwhile. */
  private nextRound(): Promise<Map<string, Error>> {
    this.queued ??= (this.current ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => {
        this.queued = null;
        this.current = this.round().finally(() => {
          this.current = null;
        });
        return this.current;
      });
    return this.queued;
  }

  /** One round over every log due; returns the failure of each log that failed (a halt is not one). */
  private async round(): Promise<Map<string, Error>> {
    const signer = this.options.signer;
    const failures = new Map<string, Error>();
    if (!signer) return failures;
    const asked = new Set(this.asked);
    this.asked.clear();
    // Every log asked for, then those with events to integrate, longest unsigned first, up to the round's
    // budget: with more logs waiting than that, each still gets a checkpoint every few intervals.
    const waiting = [...this.logs].filter(([tenant, s]) => tenant !== INSTALLATION && !asked.has(tenant) && !s.halted && (s.storedTo > s.size || !s.loaded));
    waiting.sort(([, a], [, b]) => a.signedAt - b.signedAt);
    const organizations = [...asked].filter((tenant) => tenant !== INSTALLATION);
    const due = [...organizations, ...waiting.slice(0, Math.max(0, (this.options.logsPerRound ?? MAX_LOGS_PER_ROUND) - organizations.length)).map(([tenant]) => tenant)];
    const fail = (tenant: string, error: unknown) => {
      const state = this.state(tenant);
      state.loaded = false;
      if (error instanceof NotBegunHere || error instanceof LogBehind) return;
      if (error instanceof LedgerHalt) {
        this.halt(tenant, state, error.message);
        return;
      }
      this.counts.failures++;
      this.log.error({ tenant, error: describeDbError(error) }, 'ledger integration failed; retried next round');
      failures.set(tenant, error instanceof Error ? error : new Error('ledger integration failed'));
    };
    const started = performance.now();
    for (const plan of await this.integrateLogs(due, signer, fail)) {
      if (plan.fresh) this.unrolled.push({ tenant: plan.tenant, checkpoint: plan.checkpoint._id, body: checkpointBody(plan.checkpoint.note) });
    }
    const organizationsDone = performance.now();
    const signedBefore = this.counts.checkpoints;
    // The round's organization checkpoints become entries of the installation log, and one checkpoint of
    // it covers them all: one installation round, however many organizations signed.
    try {
      await this.append(fail);
    } catch (error) {
      fail(INSTALLATION, error);
    }
    const installation = this.state(INSTALLATION);
    if (asked.has(INSTALLATION) || (!installation.halted && installation.storedTo > installation.size)) {
      for (const plan of await this.integrateLogs([INSTALLATION], signer, fail)) if (plan.fresh) this.witnessing?.signed(plan.checkpoint);
    }
    if (this.counts.checkpoints > signedBefore || due.length > 0) {
      this.timing.rounds++;
      this.timing.organizationMs += organizationsDone - started;
      this.timing.installationMs += performance.now() - organizationsDone;
    }
    return this.finish(failures, asked);
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
  private async append(fail: (tenant: string, error: unknown) => void = (tenant, error) => {
    if (!(error instanceof LedgerHalt)) throw error;
    this.log.error({ tenant, reason: error.message }, 'the installation log is HALTED: checkpoints are appended only above its signed size');
  }): Promise<void> {
    if (this.unrolled.length === 0) return;
    const rowMac = this.rowMac;
    if (!rowMac) throw new Error('appending to the installation log needs the ledger signing key');
    const floor = await this.installationFloor(fail);
    if (floor === null) return;
    const state = this.state(INSTALLATION);
    let at = Math.max(this.nextEntry ?? state.storedTo, floor);
    for (let tries = 0; this.unrolled.length > 0 && tries < 10; tries++) {
      at = await this.firstFreeEntry(at);
      if (at > state.storedTo) state.storedTo = at;
      const docs = this.unrolled.map((entry, i) => sealEntry(rowMac, { _id: at + i, ...entry }));
      const stored = await this.store.insertEntries(docs);
      for (const doc of docs.slice(0, stored)) state.pending.set(doc._id + 1, doc.body);
      at += stored;
      if (at > state.storedTo) state.storedTo = at;
      this.unrolled.splice(0, stored);
    }
    this.nextEntry = at;
  }

  /**
   * The installation log's signed size, loading the log first where it is not known, or where its head
   * says another instance signed further (one point read). Null while no checkpoint of it can be trusted
   * (its newest stored one is not this key's: the log is halted).
   */
  private async installationFloor(fail: (tenant: string, error: unknown) => void): Promise<number | null> {
    const state = this.state(INSTALLATION);
    const heads = await this.store.heads([INSTALLATION]);
    const head = heads.get(INSTALLATION) ?? 0;
    if (this.signedEntries === null || head > this.signedEntries || (!state.loaded && !state.halted)) await this.load([INSTALLATION], heads, fail);
    return this.signedEntries;
  }

  /** The first index from `at` on with no entry: entries are gapless, so a doubling probe and a bisection find it. */
  private async firstFreeEntry(at: number): Promise<number> {
    if (!(await this.store.hasEntry(at))) return at;
    let taken = at;
    let step = 1;
    while (await this.store.hasEntry(taken + step)) {
      taken += step;
      step *= 2;
    }
    let free = taken + step;
    while (free - taken > 1) {
      const middle = Math.floor((taken + free) / 2);
      if (await this.store.hasEntry(middle)) taken = middle;
      else free = middle;
    }
    return free;
  }

  /**
   * Integrates these logs: one read of their heads, loads where needed, their leaves hashed, one insert
   * of all their tiles, one of all their checkpoints, the heads raised. Returns the plans signed.
   */
  private async integrateLogs(due: string[], signer: Signer, fail: (tenant: string, error: unknown) => void): Promise<Plan[]> {
    if (due.length === 0) return [];
    let heads: Map<string, number>;
    try {
      heads = await this.store.heads(due);
    } catch (error) {
      for (const tenant of due) fail(tenant, error);
      return [];
    }
    // Build on the newest checkpoint: at a load (a restart, another instance's log) or when another
    // instance signed further than this one. Each is verified before anything is built on it.
    const loading = due.filter((tenant) => {
      const state = this.state(tenant);
      return !state.loaded || (heads.get(tenant) ?? 0) > state.size;
    });
    await this.load(loading, heads, fail);

    const plans: Plan[] = [];
    // A head behind what this instance signed: FerretDB lost a raise to a concurrent one (it writes back
    // the whole document an update read, so of two `$max` at once the lower may win). Put it right.
    const raises = new Map<string, number>();
    await mapLimited(due, LOG_READS_IN_FLIGHT, async (tenant) => {
      const state = this.state(tenant);
      if (!state.loaded) return;
      if ((heads.get(tenant) ?? 0) < state.size) raises.set(tenant, state.size);
      if (state.storedTo <= state.size) return;
      try {
        const extension = extend(state.size, state.edges, await this.leaves(tenant, state));
        if (tenant === INSTALLATION && this.witnessing) await this.witnessing.check(extension.size, (size) => this.rootAt(tenant, state, extension, size));
        plans.push(this.plan(tenant, state, extension, signer));
      } catch (error) {
        fail(tenant, error);
      }
    });

    const signed = await this.write(plans, fail);
    for (const plan of signed) raises.set(plan.tenant, plan.extension.size);
    try {
      await this.store.raiseHeads(raises, new Set(heads.keys()));
    } catch (error) {
      for (const plan of signed) fail(plan.tenant, error);
      return [];
    }
    const filled: { tenant: string; tile: string }[] = [];
    for (const { tenant, state, extension } of signed) {
      if (state.halted) this.log.warn({ tenant }, 'ledger integration resumed: the stored ledger state is sound again');
      state.halted = null;
      state.size = extension.size;
      state.edges = extension.edges;
      state.signedAt = this.now();
      for (const seq of [...state.pending.keys()]) if (seq <= extension.size) state.pending.delete(seq);
      for (const { level, index } of extension.filled) filled.push({ tenant, tile: tileKey(tenant, level, index) });
    }
    // A failure leaves only garbage (partial tiles a full one serves too): logged.
    await this.store.deletePartialTiles(filled, TILE_WIDTH).catch((error: unknown) => {
      this.log.warn({ tiles: filled.length, error: describeDbError(error) }, 'could not delete the partial versions of full ledger tiles');
    });
    return signed;
  }

  /** The root of the log's tree of `size` leaves, where it is the loaded tree's, the new one's or an older one's. */
  private async rootAt(tenant: string, state: LogState, extension: Extension, size: number): Promise<Buffer> {
    if (size === extension.size) return edgeRoot(extension.edges);
    // Signed meanwhile by another instance, past what this one loaded: the next round loads it first.
    if (size > state.size) throw new LogBehind(`the installation tree of ${size} was signed elsewhere meanwhile`);
    return rootHash(new TileReader(this.store.forTenant(tenant)).nodes(state.size), size);
  }

  /** A halted log that was asked for and did not halt again is sound: it resumes. */
  private finish(failures: Map<string, Error>, asked: Set<string>): Map<string, Error> {
    for (const tenant of asked) {
      const state = this.logs.get(tenant);
      if (state?.halted && state.loaded && !failures.has(tenant)) {
        this.log.warn({ tenant }, 'ledger integration resumed: the stored ledger state is sound again');
        state.halted = null;
      }
    }
    return failures;
  }

  /** Stops integrating `tenant`: logged at error level and counted when it starts, or for another reason. */
  private halt(tenant: string, state: LogState, reason: string): void {
    if (state.halted?.reason !== reason) {
      this.counts.conflicts++;
      this.log.error({ tenant, reason }, 'ledger integration HALTED for this organization: nothing more is signed for it until an operator runs `ledger reseal` (run `ledger audit` first)');
    }
    state.halted = { reason, at: this.now() };
    state.pending.clear();
  }

  /**
   * Picks up the tree of each log's newest checkpoint (another instance's, or this one's before a
   * restart). The checkpoints the heads name are read at once; a log loaded afresh also gets a sorted
   * read, so that a head set back (or deleted) cannot make this instance build on an older tree than one
   * it can find signed.
   */
  private async load(tenants: string[], heads: Map<string, number>, fail: (tenant: string, error: unknown) => void): Promise<void> {
    if (tenants.length === 0) return;
    let named: Map<string, LedgerCheckpointDoc>;
    try {
      named = await this.store.checkpoints(tenants.filter((t) => heads.has(t)).map((t) => checkpointId(t, heads.get(t) ?? 0)));
    } catch (error) {
      for (const tenant of tenants) fail(tenant, error);
      return;
    }
    await mapLimited(tenants, LOG_READS_IN_FLIGHT, async (tenant) => {
      const state = this.state(tenant);
      try {
        let newest = named.get(checkpointId(tenant, heads.get(tenant) ?? 0)) ?? null;
        if (!state.loaded) {
          const sorted = await this.store.forTenant(tenant).newestBySize();
          if (sorted && sorted.size > (newest?.size ?? 0)) newest = sorted;
        }
        if (newest) this.verify(tenant, newest);
        // A log with no checkpoint stored whose checkpoints the installation log holds was wiped (its
        // events and ledger state deleted): its old checkpoints are witnessed, so a new history is refused.
        else if (tenant !== INSTALLATION && (await this.hadCheckpoints(tenant))) {
          throw new LedgerHalt('the installation log holds checkpoints of this log, but none is stored: its ledger state was deleted (run `ledger audit`)');
        }
        // Known before anything is appended: no entry is ever written below it.
        if (tenant === INSTALLATION) this.signedEntries = Math.max(this.signedEntries ?? 0, newest?.size ?? 0);
        const size = newest?.size ?? 0;
        const reader = new TileReader(this.store.forTenant(tenant));
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
        if (tenant === INSTALLATION) await this.checkEntries(size, reader);
        state.size = size;
        state.edges = edges;
        state.loaded = true;
        if (size > state.storedTo) state.storedTo = size;
      } catch (error) {
        fail(tenant, error);
      }
    });
  }

  /**
   * Whether the installation log holds a checkpoint of `tenant`'s log: decided from the entries' bodies,
   * whose first line names the log, never from their `tenant` field, which nothing authenticates (entries
   * relabelled to another organization still count for theirs). An entry counts when it is the service's
   * own (a valid MAC) or when the signed installation tree covers it (its leaf is the one signed at its
   * index: an entry from before MACs, or one whose other fields were changed). Any other is foreign:
   * named, and not counted, or anyone who can write the database could halt any organization with an
   * entry made up for it.
   */
  private async hadCheckpoints(tenant: string): Promise<boolean> {
    const rowMac = this.rowMac;
    let signed: { size: number; reader: TileReader } | null | undefined;
    for await (const entry of this.store.entriesWithOrigin(this.origin(tenant))) {
      if (rowMac && isOwnEntry(rowMac, entry)) return true;
      signed ??= await this.signedInstallationTree();
      if (signed && (await signedLeafIs(signed.reader, signed.size, entry))) return true;
      this.store.foreign.met('entry', entry, 'the installation log');
    }
    return false;
  }

  /** The installation log's signed size (as loaded, else its newest checkpoint this key signed) and a reader of its tiles; null: none. */
  private async signedInstallationTree(): Promise<{ size: number; reader: TileReader } | null> {
    const store = this.store.forTenant(INSTALLATION);
    let size = this.signedEntries;
    if (size === null) {
      const newest = await store.newestBySize();
      try {
        if (newest) this.verify(INSTALLATION, newest);
      } catch {
        return null;
      }
      size = newest?.size ?? 0;
    }
    return size > 0 ? { size, reader: new TileReader(store) } : null;
  }

  /**
   * At a load of the installation log whose tiles give its signed root (of `size` entries): every entry
   * below `size` must be there, or the log halts (an entry deleted from the signed tree: an organization's
   * checkpoints gone from it, and its index free for an entry that would not be the one signed). Checked
   * cheaply: a count of the entries not counted before in this process (the whole range at a start), or,
   * where all were, the last one. Once per process, the upgrade: entries below `size` written before
   * entries had a MAC get theirs, each only if its leaf is the one signed at its index and its `tenant`
   * and `checkpoint` fields are its body's; any other stays without one, foreign (named; `ledger audit`
   * reports it). Past the signed tree, an entry without a MAC is foreign like any other (ownEntries).
   */
  private async checkEntries(size: number, reader: TileReader): Promise<void> {
    if (size === 0) return;
    const from = Math.min(this.entriesCounted, size);
    const missing = from < size ? size - from - (await this.store.countEntries(from, size)) : (await this.store.hasEntry(size - 1)) ? 0 : 1;
    if (missing > 0) {
      throw new LedgerHalt(`${missing} of the installation log's entries ${from} to ${size - 1} are missing from its signed tree of ${size}: deleted behind the service's back (run \`ledger audit\`, which names them); nothing is appended below the signed size`);
    }
    this.entriesCounted = size;
    const rowMac = this.rowMac;
    if (this.entriesUpgraded || !rowMac) return;
    let sealed = 0;
    let batch: LedgerEntryDoc[] = [];
    for await (const entry of this.store.unsealedEntriesBelow(size)) {
      const fields = entryFieldsOfBody(this.options.name, entry.body);
      if (fields && fields.tenant === entry.tenant && fields.checkpoint === entry.checkpoint && (await signedLeafIs(reader, size, entry))) {
        batch.push(sealEntry(rowMac, { _id: entry._id, tenant: entry.tenant, checkpoint: entry.checkpoint, body: entry.body }));
      } else this.store.foreign.met('entry', entry, 'the installation log (an entry without a MAC inside the signed tree)');
      if (batch.length >= 500) {
        await this.store.sealEntries(batch);
        sealed += batch.length;
        batch = [];
      }
    }
    await this.store.sealEntries(batch);
    sealed += batch.length;
    if (sealed > 0) this.log.warn({ sealed, size }, 'installation log entries from before MACs, covered by its signed tree, were given their MAC');
    this.entriesUpgraded = true;
  }

  /**
   * The installation log's entries from index `from` to `to`, read back to be signed: each the service's
   * own (a valid MAC). A foreign one (written behind the service's back, or an entry of the service's
   * changed before it was signed) is never signed: it is moved aside into `foreign_rows` (named, counted,
   * kept as evidence) and its index filled at once (fillForeignPlace); the read goes on from there.
   */
  private async ownEntries(from: number, to: number): Promise<LedgerEntryDoc[]> {
    const rowMac = this.rowMac;
    if (!rowMac) throw new Error('reading installation log entries back to sign them needs the ledger signing key');
    const own: LedgerEntryDoc[] = [];
    for (let aside = 0; ; aside++) {
      const at = (own.at(-1)?._id ?? from - 1) + 1;
      if (at > to) return own;
      const read = await this.store.entriesBetween(at, to);
      const i = read.findIndex((entry) => !Number.isInteger(entry._id) || !isOwnEntry(rowMac, entry));
      if (i < 0) return [...own, ...read];
      own.push(...read.slice(0, i));
      const foreign = read[i] as LedgerEntryDoc;
      if (aside >= 16) throw new Error(`foreign installation log entries keep being met from index ${foreign._id} on; retried next round`);
      await this.store.setEntryAside(foreign, 'the installation log');
      if (Number.isInteger(foreign._id)) await this.fillForeignPlace(foreign._id, rowMac);
    }
  }

  /**
   * The index `index` of a foreign entry just moved aside, past the signed tree, filled so that the
   * installation log goes on: with a repeat of the service's own entry just before it (at index 0, just
   * after it), sealed for this index. Decision: the entries after it stay where they are rather than
   * being moved down or appended again, because another instance may be about to sign them from its
   * memory at their indices (`pending`): moving them under it would make it sign a tree that the stored
   * entries do not give. A repeated organization checkpoint is harmless: entries may hold a checkpoint
   * appended before (a reader's rollUp does too), and a monitor meets the same checkpoint twice, which
   * extends itself. With no entry of the service's own beside it, the next one appended here takes it.
   */
  private async fillForeignPlace(index: number, rowMac: RowMac): Promise<void> {
    const near = await this.store.entriesBetween(Math.max(0, index - 1), index + 1);
    const source = near.find((e) => e._id === index - 1 && isOwnEntry(rowMac, e)) ?? near.find((e) => e._id === index + 1 && isOwnEntry(rowMac, e));
    if (!source) {
      this.nextEntry = Math.min(this.nextEntry ?? index, index);
      return;
    }
    // Taken meanwhile (another instance filled it first): the next read checks what is there.
    await this.store.insertEntry(sealEntry(rowMac, { _id: index, tenant: source.tenant, checkpoint: source.checkpoint, body: source.body }));
  }

  /** The leaf hashes of the log's next events (or entries), up to MAX_ROUND: those handed over, the others read back. */
  private async leaves(tenant: string, state: LogState): Promise<Buffer[]> {
    const to = Math.min(state.storedTo, state.size + MAX_ROUND);
    if (tenant === INSTALLATION) {
      // Entry index = seq − 1; `pending` holds the bodies of the entries appended here.
      return this.readLeaves(state, to, (seq) => {
        const body = state.pending.get(seq);
        return typeof body === 'string' ? leafHash(body) : undefined;
      }, async (from, upTo) => (await this.ownEntries(from - 1, upTo - 1)).map((e) => ({ seq: e._id + 1, leaf: leafHash(e.body) })), 'installation log entry at seq');
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
        if (state.pending.size === 0 || this.now() - state.unanchoredSince < BEGIN_GRACE_MS) throw new NotBegunHere();
        throw new LedgerHalt(`events from sequence number ${seq} on are stored, but no signed checkpoint covers them and this instance did not store them: the ledger state is missing`);
      }
      return undefined;
    }, async (from, upTo) => this.ownLeaves(tenant, state, from, upTo, await this.store.forTenant(tenant).eventsBetween(from, upTo)), `event of ${tenant} at seq`);
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
    const leaves: { seq: number; leaf: Buffer }[] = [];
    const commits = docs.map((doc) => ownCommit(this.rowMac, doc));
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
        this.store.foreign.met(isTombstone(doc) ? 'tombstone' : 'event', doc, 'the ledger');
        throw new LedgerHalt(`the event at sequence number ${doc.seq} has no valid MAC and events of the service's are stored after it: it was changed behind the service's back before it was signed (run \`ledger audit\`)`);
      }
      await this.store.foreign.moveEventAside(doc, 'the ledger');
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

  /** The log's next tree in memory: its tiles, root and signed checkpoint. */
  private plan(tenant: string, state: LogState, extension: Extension, signer: Signer): Plan {
    const root = edgeRoot(extension.edges);
    const note = signNote(checkpointText({ origin: this.origin(tenant), size: extension.size, root }), signer);
    const checkpoint: LedgerCheckpointDoc = { _id: checkpointId(tenant, extension.size), tenant, size: extension.size, root: root.toString('base64'), note, created_at: this.clock.now() };
    return { tenant, state, extension, checkpoint, fresh: true };
  }

  /** The round's writes: every plan's tiles in one insert, then the checkpoints of those whose tiles are all stored. Returns the plans signed. */
  private async write(plans: Plan[], fail: (tenant: string, error: unknown) => void): Promise<Plan[]> {
    if (plans.length === 0) return [];
    const tiles = plans.flatMap((plan) => plan.extension.tiles.map((tile) => ({ plan, doc: tileDoc(plan.tenant, tile) })));
    let refusedTiles: Set<number>;
    try {
      refusedTiles = await this.store.insertTiles(tiles.map((t) => t.doc));
    } catch (error) {
      for (const plan of plans) fail(plan.tenant, error);
      return [];
    }
    const tilesRefused = new Set([...refusedTiles].map((index) => (tiles[index] as (typeof tiles)[number]).plan));
    for (const plan of tilesRefused) fail(plan.tenant, new Error('the database refused a ledger tile'));
    const ready = plans.filter((plan) => !tilesRefused.has(plan));
    let outcome: { taken: Set<number>; refused: Set<number> };
    try {
      outcome = await this.store.insertCheckpoints(ready.map((plan) => plan.checkpoint));
    } catch (error) {
      for (const plan of ready) fail(plan.tenant, error);
      return [];
    }
    // Signed already, by another instance or before a restart: it must be this very tree.
    const taken = ready.filter((_, i) => outcome.taken.has(i));
    let stored = new Map<string, LedgerCheckpointDoc>();
    try {
      stored = await this.store.checkpoints(taken.map((plan) => plan.checkpoint._id));
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
        if (!outcome.taken.has(i)) this.counts.checkpoints++;
        signed.push({ ...plan, fresh: !outcome.taken.has(i) });
      }
    });
    return signed;
  }

  /**
   * The operator's way out of a halt (`ledger reseal`): rebuilds the log's tiles from its stored events
   * and signs their tree, but only as an extension of the newest checkpoint this key signed that can be
   * found: the events must still give that checkpoint's root, or nothing is written. Checkpoint documents
   * this key did not sign are deleted. With no signed checkpoint at all, the stored events are sealed as
   * they are: that is the operator's decision, and it is logged, and the new checkpoint is appended to the
   * installation log like any other. Holds every leaf hash in memory (32 bytes
   * and a Buffer's overhead per event).
   */
  async reseal(tenant: string, rows: { adopt?: boolean; setAside?: boolean } = {}): Promise<{ anchor: number | null; size: number; planted: number; adopted: number; setAside: number; foreignLeft: number }> {
    const signer = this.options.signer;
    if (!signer) throw new Error('resealing needs the ledger signing key');
    const store = this.store.forTenant(tenant);
    let anchor: LedgerCheckpointDoc | null = null;
    const planted: string[] = [];
    for await (const doc of store.checkpointsNewestFirst()) {
      try {
        this.verify(tenant, doc);
        anchor = doc;
        break;
      } catch {
        planted.push(doc._id);
      }
    }
    // Every leaf from the events, or, for events pruned or erased, from their tombstones. Up to the anchor,
    // whatever their MACs (its root vouches for them, and they are sealed); past it, only the service's own
    // rows (db/rowMacs.ts), unless the operator adopts the others (`--adopt`: sealed as they are) or sets
    // them aside (`--set-aside`: moved into foreign_rows).
    const rowMac = this.rowMac as RowMac;
    const leaves: Buffer[] = [];
    const seals: { _id: string; seq: number; mac: string }[] = [];
    const foreignPast: StoredEvent[] = [];
    for await (const doc of store.eventsInOrder()) {
      if (doc.seq !== leaves.length + 1 + foreignPast.length) break;
      const commit = leafCommitOfStored(doc);
      const own = isOwnStored(rowMac, doc, commit);
      if (!own && doc.seq > (anchor?.size ?? 0) && !rows.adopt) {
        foreignPast.push(doc);
        continue;
      }
      if (foreignPast.length > 0) break;
      if (!own) seals.push({ _id: doc._id, seq: doc.seq, mac: rowMacOf(rowMac, doc, commit) });
      leaves.push(eventLeafHash(tenant, doc.seq, commit));
    }
    const size = leaves.length;
    if (anchor) {
      if (size < anchor.size) throw new LedgerHalt(`only events 1 to ${size} are stored in sequence, and the signed checkpoint of size ${anchor.size} needs every one of its events: restore them first`);
      if (!(await rootHash(nodesOf(leaves), anchor.size)).equals(Buffer.from(anchor.root, 'base64'))) {
        throw new LedgerHalt(`the stored events no longer give the root of the signed checkpoint of size ${anchor.size}: restore them first (\`ledger audit\` names them)`);
      }
    }
    if (size === 0) throw new LedgerHalt('the organization has no events to seal');
    const tiles = new Map<string, ReturnType<typeof tileDoc>>();
    for (const treeSize of [anchor?.size ?? 0, size]) for (const tile of tilesOf(leaves, treeSize)) tiles.set(tileDoc(tenant, tile)._id, tileDoc(tenant, tile));
    const root = await rootHash(nodesOf(leaves), size);
    const note = signNote(checkpointText({ origin: this.origin(tenant), size, root }), signer);
    const checkpoint: LedgerCheckpointDoc = { _id: checkpointId(tenant, size), tenant, size, root: root.toString('base64'), note, created_at: this.clock.now() };
    await store.replaceLog(planted, [...tiles.values()], checkpoint);
    await store.sealRows(seals);
    if (rows.setAside) for (const doc of foreignPast) await this.store.foreign.moveEventAside(doc, 'ledger reseal --set-aside');
    this.logs.delete(tenant);
    // Like every checkpoint, it enters the installation log: a reseal is visible to the witnesses' and
    // the customers' monitors, whatever it sealed.
    this.unrolled.push({ tenant, checkpoint: checkpoint._id, body: checkpointBody(note) });
    await this.append();
    const adopted = rows.adopt ? seals.filter((seal) => seal.seq > (anchor?.size ?? 0)).length : 0;
    const setAside = rows.setAside ? foreignPast.length : 0;
    this.log.warn({ tenant, anchor: anchor?.size ?? null, size, planted: planted.length, sealed: seals.length, adopted, setAside }, 'ledger RESEALED by an operator from the stored events');
    return { anchor: anchor?.size ?? null, size, planted: planted.length, adopted, setAside, foreignLeft: foreignPast.length - setAside };
  }

  /** Throws LedgerHalt unless `doc` is a checkpoint of `tenant`'s log that this installation's key signed, stored under its own id. */
  private verify(tenant: string, doc: LedgerCheckpointDoc): void {
    const signer = this.options.signer;
    if (!signer) return;
    if (doc._id === checkpointId(tenant, doc.size) && checkpointProblem(doc, this.origin(tenant), signer) === null) return;
    throw new LedgerHalt(`the stored checkpoint of size ${doc.size} is not one this installation's key signed for this log`);
  }
}
