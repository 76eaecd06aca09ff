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
 * This file holds the rounds and what each log is handed; the integration of a batch of logs is
 * integrate.ts, the installation log's entries installationRollup.ts and installationEntries.ts, the
 * operator's reseal reseal.ts.
 *
 * The tree is a function of the stored events alone, and every write is an insert of a document whose
 * id names its content (a tile at a width, a checkpoint at a size): two instances that integrate the
 * same organization write the same documents, and Ed25519 is deterministic, so they sign the same
 * checkpoints. The service never signs two checkpoints inconsistent with each other unless the stored
 * events were changed behind its back, and then it refuses to sign (a halt: docs/trust-model.md, "The database is not trusted").
 */
import type { Logger } from 'pino';
import type { EventHashes } from '../domain/ledger/eventHash';
import { INSTALLATION, LedgerHalt, LogBehind, logOrigin } from '../domain/ledger/log';
import type { Signer } from '../domain/ledger/note';
import type { Clock } from '../domain/time';
import { type EventDoc, eventHashesOfDoc, type LedgerCheckpointDoc } from '../db/documents';
import { describeDbError } from '../db/errors';
import type { LedgerStore } from '../db/ledgerStore';
import { openWriteSide, type WriteSide } from './installationRollup';
import { type FailLog, type InstallationWitnessing, NotBegunHere } from './integrate';
import { type LogState, writeContext } from './logState';
import { reseal, type Resealed } from './reseal';
import { verifyCheckpoint } from './signedCheckpoint';

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
/** A halted log is looked at again this often: an operator's `ledger reseal` elsewhere resumes it. */
const HALT_RECHECK_MS = 30_000;

export interface LedgerOptions {
  /** The key name (LEDGER_NAME); an organization's log is `<name>/<organization id>`. */
  name: string;
  /** Null where nothing is ever signed (the admin CLI). */
  signer: Signer | null;
  intervalMs: number;
  /** Logs a round signs besides those asked for (default MAX_LOGS_PER_ROUND). */
  logsPerRound?: number;
}

/** What an integrator is built from: the ledger's options, and the store, clock and logger it works with. */
export interface LedgerIntegratorOptions extends LedgerOptions {
  store: LedgerStore;
  clock: Clock;
  log: Logger;
  /** The installation's witnesses, asked before its log is signed (none: no policy, or nothing signed here). */
  witnessing?: InstallationWitnessing | null;
}

/**
 * What a write answers about each event: its sequence number (what people are shown), its leaf index
 * (seq − 1, the tree position proofs use) and the hash the leaf commits to.
 */
export interface Receipt extends EventHashes {
  seq: number;
  leaf_index: number;
}

export class LedgerIntegrator {
  private readonly side: WriteSide;
  private readonly options: LedgerOptions;
  private readonly log: Logger;
  private timer: NodeJS.Timeout | null = null;
  private readonly counts = { failures: 0, conflicts: 0 };
  /** Rounds that signed something, and the time they spent on the organizations' logs and on the installation log's part. */
  private readonly timing = { rounds: 0, organizationMs: 0, installationMs: 0 };
  /** The round running now, and the one asked for while it runs (it starts when this one ends). */
  private current: Promise<Map<string, Error>> | null = null;
  private queued: Promise<Map<string, Error>> | null = null;
  /** Logs a round must look at even with nothing new: halted ones to recheck, ones a reader asked for. */
  private readonly asked = new Set<string>();
  private readonly witnessing: InstallationWitnessing | null;

  constructor({ store, clock, log, witnessing, ...options }: LedgerIntegratorOptions) {
    this.options = options;
    this.witnessing = witnessing ?? null;
    this.log = log;
    this.side = openWriteSide(writeContext({ store, name: options.name, signer: options.signer, clock, log }));
  }

  /** Checkpoints signed, rounds failed, halts (counted each time a log halts), and the logs halted now (metrics). */
  get stats(): { checkpoints: number; failures: number; conflicts: number; halted: number; rounds: number; organizationMs: number; installationMs: number } {
    let halted = 0;
    for (const state of this.side.states.values()) if (state.halted) halted++;
    return { checkpoints: this.side.integration.checkpointsSigned, ...this.counts, halted, ...this.timing };
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
    const integration = this.side.integration;
    for (let signed = -1; signed !== integration.checkpointsSigned && this.waiting(); ) {
      signed = integration.checkpointsSigned;
      await this.nextRound().catch(() => undefined);
    }
  }

  /** Whether some log that is not halted has events to integrate. */
  private waiting(): boolean {
    if (this.side.rollup.waiting) return true;
    for (const state of this.side.states.values()) if (!state.halted && state.storedTo > state.size) return true;
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
    const known = this.side.states.get(doc.tenant)?.pending.get(doc.seq);
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
      verifyCheckpoint(this.options.name, this.options.signer, checkpoint.tenant, checkpoint);
    } catch (error) {
      this.log.error({ tenant: checkpoint.tenant, checkpoint: checkpoint._id, reason: (error as Error).message }, 'a stored checkpoint was not appended to the installation log: this key did not sign it for its log');
      return;
    }
    if (!this.side.rollup.holds(checkpoint._id)) this.side.rollup.add(checkpoint);
    await this.integrate(INSTALLATION);
  }

  /** Stops signing the installation log at once: a witness raised an alarm. */
  haltInstallation(reason: string): void {
    this.halt(INSTALLATION, this.state(INSTALLATION), reason);
  }

  /** Why `tenant`'s log is halted on this instance, or null. */
  haltedReason(tenant: string): string | null {
    return this.side.states.get(tenant)?.halted?.reason ?? null;
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

  /**
   * The operator's way out of a halt, on this instance (reseal.ts): its checkpoint joins this instance's
   * installation log, and the log is loaded afresh at its next round.
   */
  reseal(tenant: string, rows: { adopt?: boolean; setAside?: boolean } = {}): Promise<Resealed> {
    return reseal(this.side, tenant, rows);
  }

  private now(): number {
    return this.side.states.now();
  }

  private state(tenant: string): LogState {
    return this.side.states.of(tenant);
  }

  private tick(): void {
    if (this.current || this.queued) return;
    const now = this.now();
    for (const [tenant, state] of this.side.states.entries()) {
      if (state.halted) {
        if (now - state.halted.at >= HALT_RECHECK_MS) this.asked.add(tenant);
      } else if (tenant !== INSTALLATION && state.storedTo <= state.size && now - state.active > IDLE_MS) this.side.states.delete(tenant);
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
    const { integration, rollup } = this.side;
    const asked = new Set(this.asked);
    this.asked.clear();
    // Every log asked for, then those with events to integrate, longest unsigned first, up to the round's
    // budget: with more logs waiting than that, each still gets a checkpoint every few intervals.
    const waiting = [...this.side.states.entries()].filter(([tenant, s]) => tenant !== INSTALLATION && !asked.has(tenant) && !s.halted && (s.storedTo > s.size || !s.loaded));
    waiting.sort(([, a], [, b]) => a.signedAt - b.signedAt);
    const organizations = [...asked].filter((tenant) => tenant !== INSTALLATION);
    const due = [...organizations, ...waiting.slice(0, Math.max(0, (this.options.logsPerRound ?? MAX_LOGS_PER_ROUND) - organizations.length)).map(([tenant]) => tenant)];
    const fail: FailLog = (tenant, error) => {
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
    for (const plan of await integration.integrateLogs(due, signer, fail, this.witnessing)) {
      if (plan.fresh) rollup.add(plan.checkpoint);
    }
    const organizationsDone = performance.now();
    const signedBefore = integration.checkpointsSigned;
    // The round's organization checkpoints become entries of the installation log, and one checkpoint of
    // it covers them all: one installation round, however many organizations signed.
    try {
      await rollup.append(fail);
    } catch (error) {
      fail(INSTALLATION, error);
    }
    const installation = this.state(INSTALLATION);
    if (asked.has(INSTALLATION) || (!installation.halted && installation.storedTo > installation.size)) {
      for (const plan of await integration.integrateLogs([INSTALLATION], signer, fail, this.witnessing)) if (plan.fresh) this.witnessing?.signed(plan.checkpoint);
    }
    if (integration.checkpointsSigned > signedBefore || due.length > 0) {
      this.timing.rounds++;
      this.timing.organizationMs += organizationsDone - started;
      this.timing.installationMs += performance.now() - organizationsDone;
    }
    return this.finish(failures, asked);
  }

  /** A halted log that was asked for and did not halt again is sound: it resumes. */
  private finish(failures: Map<string, Error>, asked: Set<string>): Map<string, Error> {
    for (const tenant of asked) {
      const state = this.side.states.get(tenant);
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
}
