/**
 * The installation log's witnesses (c2sp.org/tlog-witness v1.0.0): each new installation checkpoint
 * signed here is submitted to every witness of the policy (LEDGER_WITNESS_POLICY), with a consistency
 * proof from the size the witness last cosigned; the cosignatures it answers are verified and stored.
 *
 * A witness that holds a larger tree than the log, or another root at a size the log has, saw another
 * history: an alarm (error log, metric, `ledger audit` fails), never retried away. Before the
 * installation log signs a tree, `check` makes sure it extends the newest checkpoint every witness
 * cosigned; after a start, it first asks every witness where it stands (submitting the newest stored
 * checkpoint, or a signed empty tree, which extends nothing and so proves nothing false), so a service
 * whose database was wiped or rolled back is stopped by its witnesses before it signs a new history.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { ConfigError } from '../config/env';
import { checkpointText } from '../domain/ledger/formats';
import { signNote, type Signer } from '../domain/ledger/note';
import { type CosignerVerifier, parseCosignerVerifier, verifyCosignature } from '../domain/ledger/cosigner';
import { addCheckpointBody, noteText, parsePolicy, parseSignatureLines, type Policy, quorumMet, SIZE_CONTENT_TYPE } from '../domain/ledger/witnessFormats';
import type { LedgerCheckpointDoc, LedgerWitnessDoc } from '../db/documents';
import type { WitnessStore } from '../db/witnessStore';
import { describeDbError } from '../db/errors';
import { INSTALLATION, LedgerHalt, LogBehind } from '../domain/ledger/log';
import type { InstallationWitnessing } from './integrate';
import type { TenantLedgerReader } from './reader';

/** Reads LEDGER_WITNESS_POLICY's file; throws a ConfigError naming the file and the line that is wrong. */
export function readWitnessPolicy(path: string): Policy {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read the witness policy ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    return parsePolicy(text);
  } catch (error) {
    throw new ConfigError(`the witness policy ${path} is not a c2sp.org/tlog-policy file: ${(error as Error).message}`);
  }
}

/** How long one add-checkpoint request may take. */
const REQUEST_TIMEOUT_MS = 10_000;
/** 409 answers followed (each names the witness's size) before giving up until the next checkpoint. */
const MAX_CONFLICTS = 3;

/** What the service shows of one witness (API, dashboard, metrics). */
export interface WitnessStatus {
  name: string;
  verifier_key: string;
  url: string | null;
  /** The newest installation checkpoint it cosigned (0: none yet). */
  cosigned_size: number;
  error: string | null;
  alarm: string | null;
}

/** An installation checkpoint, its note with the cosignatures, and whether they meet the policy's quorum. */
export interface Cosigned {
  checkpoint: LedgerCheckpointDoc;
  note: string;
  witnessed: boolean;
}

interface Witness {
  name: string;
  verifier: CosignerVerifier;
  url: string | null;
}

/** The empty tree's root (RFC 6962: the hash of nothing). */
const EMPTY_ROOT = createHash('sha256').digest();

export class Witnesses implements InstallationWitnessing {
  private readonly witnesses: Witness[];
  private docs = new Map<string, LedgerWitnessDoc>();
  /** Whether every witness was asked where it stands since this process started. */
  private checkedIn = false;
  /** Per witness, the submission running and the newest checkpoint waiting for it. */
  private readonly running = new Map<string, Promise<void>>();
  private readonly waiting = new Map<string, LedgerCheckpointDoc>();
  readonly counts = { accepted: 0, conflicts: 0, refused: 0, unreachable: 0, alarms: 0 };
  readonly policy: Policy;
  private readonly store: WitnessStore;
  private readonly installation: TenantLedgerReader;
  private readonly signer: Signer;
  private readonly log: Logger;
  /** Told of every alarm (the composition root halts the installation log with it). */
  private readonly onAlarm: (reason: string) => void;

  constructor(options: { policy: Policy; store: WitnessStore; installation: TenantLedgerReader; signer: Signer; log: Logger; onAlarm: (reason: string) => void }) {
    ({ policy: this.policy, store: this.store, installation: this.installation, signer: this.signer, log: this.log, onAlarm: this.onAlarm } = options);
    const policy = this.policy;
    this.witnesses = policy.witnesses.map((w) => ({ name: w.name, verifier: parseCosignerVerifier(w.keyText), url: w.url }));
  }

  get origin(): string {
    return this.installation.origin;
  }

  /** Every witness's state as last read or written here. */
  status(): WitnessStatus[] {
    return this.witnesses.map((w) => {
      const doc = this.docs.get(w.verifier.text);
      return { name: w.name, verifier_key: w.verifier.text, url: w.url, cosigned_size: doc?.size ?? 0, error: doc?.error ?? null, alarm: doc?.alarm ?? null };
    });
  }

  /** Reads the witnesses' documents (another instance may have advanced them). */
  async refresh(): Promise<WitnessStatus[]> {
    this.docs = await this.store.witnesses(this.witnesses.map((w) => w.verifier.text));
    return this.status();
  }

  async check(size: number, rootAt: (size: number) => Promise<Buffer>): Promise<void> {
    if (!this.checkedIn) {
      await this.checkIn();
      this.checkedIn = true;
    }
    await this.refresh();
    for (const w of this.witnesses) {
      const doc = this.docs.get(w.verifier.text);
      if (!doc) continue;
      if (doc.alarm) throw new LedgerHalt(`witness ${w.name} raised an alarm: ${doc.alarm}`);
      if (doc.size > size) {
        // Another instance signed further (its checkpoint is stored): this one is behind, and reloads.
        const stored = await this.installation.ofSize(doc.size);
        if (stored && stored.root === doc.root) throw new LogBehind(`witness ${w.name} cosigned the installation tree of ${doc.size}, beyond this instance's ${size}`);
        throw new LedgerHalt(`witness ${w.name} cosigned a tree of ${doc.size} entries that this log does not hold (it would sign one of ${size})`);
      }
      if (doc.size > 0 && doc.root && !(await rootAt(doc.size)).equals(Buffer.from(doc.root, 'base64'))) {
        throw new LedgerHalt(`witness ${w.name} cosigned another tree of ${doc.size} entries than this log holds`);
      }
    }
  }

  signed(checkpoint: LedgerCheckpointDoc): void {
    for (const w of this.witnesses) this.enqueue(w, checkpoint);
  }

  /** Resolves once every submission started so far has ended (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()]);
  }

  /**
   * Asks every witness where it stands, before the first tree signed after a start: submits the newest
   * stored installation checkpoint, or a signed empty tree. An unreachable witness does not hold the log
   * back (it is asked again with the next checkpoint); an alarm does.
   */
  private async checkIn(): Promise<void> {
    await this.refresh();
    let newest = await this.installation.newest();
    if (!newest) {
      const note = signNote(checkpointText({ origin: this.origin, size: 0, root: EMPTY_ROOT }), this.signer);
      newest = { _id: `${INSTALLATION}/0`, tenant: INSTALLATION, size: 0, root: EMPTY_ROOT.toString('base64'), note, created_at: new Date() };
    }
    for (const w of this.witnesses) this.enqueue(w, newest);
    await this.settled();
  }

  /** Submissions to one witness run one at a time; of the checkpoints waiting meanwhile, only the newest is sent. */
  private enqueue(w: Witness, checkpoint: LedgerCheckpointDoc): void {
    if (!w.url) return;
    const key = w.verifier.text;
    const queued = this.waiting.get(key);
    if (!queued || queued.size <= checkpoint.size) this.waiting.set(key, checkpoint);
    if (this.running.has(key)) return;
    const run = async () => {
      for (let next = this.waiting.get(key); next; next = this.waiting.get(key)) {
        this.waiting.delete(key);
        await this.submit(w, next).catch((error: unknown) => {
          this.log.warn({ witness: w.name, error: describeDbError(error) }, 'witness state could not be saved');
        });
      }
    };
    this.running.set(key, run().finally(() => this.running.delete(key)));
  }

  private async submit(w: Witness, submitted: LedgerCheckpointDoc): Promise<void> {
    let checkpoint = submitted;
    const key = w.verifier.text;
    const doc: LedgerWitnessDoc = this.docs.get(key) ?? { _id: key, name: w.name, size: 0, root: null, error: null, alarm: null, updated_at: new Date() };
    const save = async (change: Partial<LedgerWitnessDoc>) => {
      Object.assign(doc, change, { updated_at: new Date() });
      this.docs.set(key, doc);
      await this.store.save(doc);
    };
    const alarm = async (message: string) => {
      this.counts.alarms++;
      this.log.error({ witness: w.name, size: checkpoint.size, message }, 'WITNESS ALARM: a witness holds a history this installation log does not extend; nothing more is signed for the installation log until an operator investigates (`ledger audit`)');
      await save({ alarm: message, error: null });
      this.onAlarm(`witness ${w.name} raised an alarm: ${message}`);
    };
    const failed = async (message: string, counter: 'refused' | 'unreachable') => {
      this.counts[counter]++;
      this.log.warn({ witness: w.name, size: checkpoint.size, message }, 'witness did not cosign the installation checkpoint');
      await save({ error: message });
    };
    if (doc.alarm) return;
    /**
     * The witness is at `size`, beyond this checkpoint. Another instance of this installation may have
     * signed and submitted further already: then the newest checkpoint stored is sent from that size
     * instead (the witness checks it extends what it holds). Otherwise the witness was shown a longer
     * history than this log has: an alarm.
     */
    const beyond = async (size: number): Promise<boolean> => {
      const newest = await this.installation.newest();
      if (!newest || newest.size < size) {
        await alarm(`the witness cosigned a tree of ${size} entries, and this log has ${newest?.size ?? 0}: it was shown another history, or this log was rolled back`);
        return false;
      }
      checkpoint = newest;
      return true;
    };
    let old = doc.size;
    if (old > checkpoint.size && !(await beyond(old))) return;
    for (let conflicts = 0; ; ) {
      const body = noteText(checkpoint.note);
      const proof = old === 0 || old === checkpoint.size ? [] : await this.installation.consistency(old, checkpoint.size);
      let response: Response;
      let text: string;
      try {
        response = await fetch(`${(w.url as string).replace(/\/+$/, '')}/add-checkpoint`, {
          method: 'POST',
          body: addCheckpointBody(old, proof, checkpoint.note),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        text = await response.text();
      } catch (error) {
        // fetch's own message is "fetch failed"; the reason (ECONNREFUSED, a timeout) is its cause.
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        return failed(`unreachable: ${cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error))}`, 'unreachable');
      }
      switch (response.status) {
        case 200: {
          let lines;
          try {
            lines = parseSignatureLines(text);
          } catch {
            return failed('answered 200 with malformed signature lines', 'refused');
          }
          const valid = lines.map((line) => ({ line, time: verifyCosignature(body, line, w.verifier) })).filter((c) => c.time !== null);
          if (valid.length === 0) return failed('answered 200 without a valid cosignature by its key', 'refused');
          for (const { line, time } of valid) {
            await this.store.insertCosignature({ _id: `${checkpoint._id}/${line.id.toString(16).padStart(8, '0')}`, checkpoint: checkpoint._id, size: checkpoint.size, witness: key, line: line.line, time: time as number });
          }
          this.counts.accepted++;
          return save({ size: checkpoint.size, root: checkpoint.root, error: null });
        }
        case 409: {
          this.counts.conflicts++;
          const size = /^(0|[1-9][0-9]{0,15})\n$/.exec(text);
          if (!size || !response.headers.get('content-type')?.startsWith(SIZE_CONTENT_TYPE)) return failed(`answered 409 without its size as ${SIZE_CONTENT_TYPE}`, 'refused');
          const theirs = Number(size[1]);
          // Same size, another root (v1.0.0 answers 409 for it): the witness cosigned another tree of this size.
          if (theirs === old) return alarm(`the witness cosigned another tree of ${theirs} entries than this log's`);
          if (++conflicts > MAX_CONFLICTS) return failed(`its size kept changing (409, last ${theirs})`, 'refused');
          if (theirs > checkpoint.size && !(await beyond(theirs))) return;
          old = theirs;
          continue;
        }
        case 422:
          return alarm(`the witness refused the consistency proof from its tree of ${old} entries to ${checkpoint.size}: it holds another history`);
        case 404:
          return failed('the witness does not know this log (404): add its origin and key to the witness\'s configuration', 'refused');
        case 403:
          return failed('the witness does not trust this log\'s key (403)', 'refused');
        default:
          return failed(`answered ${response.status}`, 'refused');
      }
    }
  }

  /**
   * The newest installation checkpoint whose cosignatures meet the policy's quorum, with them appended
   * to its note (what a verifier holding the policy checks), or null.
   */
  async newestWitnessed(): Promise<Cosigned | null> {
    const sizes = [...new Set([...this.docs.values()].map((doc) => doc.size))].filter((size) => size > 0).sort((a, b) => b - a);
    for (const size of sizes) {
      const checkpoint = await this.installation.ofSize(size);
      const found = checkpoint ? await this.cosigned(checkpoint) : null;
      if (found?.witnessed) return found;
    }
    return null;
  }

  /** An installation checkpoint with the verified cosignatures stored for it appended to its note, and whether they meet the quorum. */
  async cosigned(checkpoint: LedgerCheckpointDoc): Promise<Cosigned> {
    const body = noteText(checkpoint.note);
    const names = new Set<string>();
    let lines = '';
    for (const cosignature of await this.store.cosignatures(checkpoint._id)) {
      const w = this.witnesses.find((x) => x.verifier.text === cosignature.witness);
      const [line] = parseSignatureLines(cosignature.line);
      if (!w || !line || verifyCosignature(body, line, w.verifier) === null) continue;
      names.add(w.name);
      lines += cosignature.line;
    }
    return { checkpoint, note: checkpoint.note + lines, witnessed: quorumMet(this.policy, names) };
  }
}

