/**
 * Receipts verified in the application that sent the events, not only by the service's CLI: each
 * recorded event is a leaf of a checkpoint signed by the key the application pinned, that checkpoint
 * extends every one this client saw before (it can persist them), and, with a witness policy, the
 * installation checkpoint that includes it is cosigned by a quorum of witnesses; with a producer key,
 * each event is signed by the application's producer. The checks are the service's own verification
 * core (src/client/webVerify.ts and domain/producerSignature.ts, bundled into this package) on WebCrypto.
 */
import { importVerifier, inclusionFailures, openCheckpoint, sameBytes, sharedNodes, verifyConsistency, verifyWitnessed, type WebVerifier } from '../../../src/client/webVerify.ts';
import { parsePolicy, type Policy, quorumMet } from '../../../src/domain/ledger/witnessFormats.ts';
import { importProducerKey, signatureProblem } from '../../../src/domain/producerSignature.ts';
import { AuditLedgerError } from './errors.ts';
import type { Checkpoint, ConsistencyProof, LedgerReceipt, ProofsSidecar, Recorded, StoredEvent } from './types.ts';

/** The newest checkpoint a client has verified: what it keeps between runs. */
export interface SeenCheckpoint {
  origin: string;
  tree_size: number;
  /** The signed note, verified again when loaded. */
  checkpoint: string;
}

/** Where the seen checkpoint is kept: a file, a database row, anything (both may be async). */
export interface SeenStore {
  load(): SeenCheckpoint | null | Promise<SeenCheckpoint | null>;
  save(seen: SeenCheckpoint): void | Promise<void>;
}

export interface VerifyOptions {
  /** The service's verifier key (`GET /v1/ledger/key` answers it; pin it from somewhere you trust). */
  verifierKey: string;
  /**
   * The organization whose log the receipts must be in (its id, as the dashboard and `key create` print
   * it). Pinned like the key: another organization's log, genuinely signed, proves nothing about yours.
   */
  organization: string;
  /** A c2sp.org/tlog-policy text (`witness` and `quorum` lines): the checkpoint must be witnessed by its quorum. */
  witnessPolicy?: string;
  /** Keeps the newest checkpoint verified, so that the next run checks the log only grew since. */
  seen?: SeenStore;
  /** How long to wait for a checkpoint that includes every receipt (and is witnessed) before failing (default 60 s). */
  waitMs?: number;
  /**
   * The producer key the API key is bound to (the client's `producer`'s, by default): each recorded
   * event must carry a signature of its content that verifies with it.
   */
  producerKey?: string;
}

/** What a verification found when every check passed. */
export interface VerifiedReceipts {
  /** Receipts whose events were proven included. */
  verified: number;
  /**
   * Receipts of events removed under retention since (answered by a replay): their leaves are checked to
   * be in the tree, but the removal itself is the service's word (a removed event has no content left to
   * prove). An application that records and verifies at once should see 0 here.
   */
  removed: number;
  /** The signed checkpoint they were proven under. */
  treeSize: number;
  /** The witnesses whose cosignatures verified (with a witness policy). */
  cosigned: string[];
}

/** A check failed: the service's answers do not prove what its receipts said. Alert on it. */
export class VerificationError extends Error {
  override readonly name = 'VerificationError';
  readonly failures: string[];

  constructor(failures: string[]) {
    super(`the receipts did not verify: ${failures.join('; ')}`);
    this.failures = failures;
  }
}

/** What the verifier needs of the REST client (AuditLedgerClient has it). */
export interface ProofSource {
  checkpoint(): Promise<Checkpoint>;
  consistency(from: number, to?: number): Promise<ConsistencyProof>;
  proofs(query: { start_date: string; end_date: string; tree_size: number }): Promise<ProofsSidecar>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type SignedCheckpoint = Awaited<ReturnType<typeof openCheckpoint>>;

/** The checkpoint in a note signed by the pinned key; a note it did not sign fails verification. */
async function opened(note: string, verifier: WebVerifier, what: string): Promise<SignedCheckpoint> {
  try {
    return await openCheckpoint(note, verifier);
  } catch (error) {
    throw new VerificationError([`${what} is not signed by ${verifier.name}'s pinned key: ${error instanceof Error ? error.message : String(error)}`]);
  }
}

type LiveReceipt = Recorded & { event: StoredEvent; receipt: LedgerReceipt };

const isRemoved = (recorded: Recorded) => 'removed' in recorded.receipt;

/** Receipts' events in groups of close timestamps (a gap of more than a minute starts a new one): one proofs request each. */
function byTime(live: readonly LiveReceipt[]): LiveReceipt[][] {
  const sorted = [...live].sort((a, b) => (a.event.timestamp < b.event.timestamp ? -1 : a.event.timestamp > b.event.timestamp ? 1 : 0));
  const groups: LiveReceipt[][] = [];
  let last = -Infinity;
  for (const recorded of sorted) {
    const at = Date.parse(recorded.event.timestamp);
    if (!(at - last <= 60_000)) groups.push([]);
    (groups.at(-1) as LiveReceipt[]).push(recorded);
    last = at;
  }
  return groups;
}

/** Checks receipts against one service, remembering the newest checkpoint it verified. */
export class ReceiptVerifier {
  private readonly options: VerifyOptions;
  private readonly policy: Policy | null;
  private verifier: Promise<WebVerifier> | null = null;
  private producer: Promise<CryptoKey> | null = null;
  /** The newest checkpoint verified (loaded from `seen` on first use). */
  private seen: { checkpoint: SignedCheckpoint; note: string } | null | undefined;

  constructor(
    private readonly source: ProofSource,
    options: VerifyOptions,
  ) {
    this.options = options;
    // Parsed at once: a wrong policy is the application's mistake, told at construction.
    this.policy = options.witnessPolicy === undefined ? null : parsePolicy(options.witnessPolicy);
  }

  /** The verification running, if any: one at a time, so the seen checkpoint only moves forward. */
  private running: Promise<unknown> = Promise.resolve();

  /** Verifies `receipts` (as recorded: the write's event and receipt); throws VerificationError if any check fails. */
  verify(receipts: readonly Recorded[]): Promise<VerifiedReceipts> {
    const next = this.running.then(() => this.verifyNow(receipts), () => this.verifyNow(receipts));
    this.running = next.catch(() => undefined);
    return next;
  }

  private async verifyNow(receipts: readonly Recorded[]): Promise<VerifiedReceipts> {
    const verifier = await (this.verifier ??= importVerifier(this.options.verifierKey));
    const failures: string[] = [];
    // A receipt and its event agree on whether the event was removed: a lie in one alone skips no proof.
    for (const { event, receipt } of receipts) {
      if (isRemoved({ event, receipt }) !== 'removed' in event) failures.push(`event ${event.id}: its receipt and its event disagree on whether it was removed`);
    }
    if (failures.length > 0) throw new VerificationError(failures);
    const live = receipts.filter((r) => !isRemoved(r)) as LiveReceipt[];
    const { answer, checkpoint } = await this.covering(verifier, receipts.reduce((max, r) => Math.max(max, r.receipt.seq), 0));
    for (const { event, receipt } of receipts) {
      if (!(Number.isInteger(receipt.leaf_index) && receipt.leaf_index >= 0 && receipt.leaf_index === receipt.seq - 1)) failures.push(`event ${event.id}: its receipt's leaf ${receipt.leaf_index} is not sequence number ${receipt.seq}`);
    }
    await this.extendsSeen(checkpoint, verifier, failures);
    for (const group of byTime(live)) await this.proveIncluded(group, checkpoint, verifier, failures);
    if (this.options.producerKey !== undefined) await this.producerSigned(live, this.options.producerKey, failures);

    let cosigned: string[] = [];
    if (this.policy && answer.installation) {
      const witnessed = await verifyWitnessed(answer.checkpoint, answer.installation, verifier, this.policy.witnesses.map((w) => ({ name: w.name, verifier_key: w.keyText })));
      cosigned = witnessed.cosigned;
      failures.push(...witnessed.failures);
      if (!quorumMet(this.policy, new Set(cosigned))) failures.push(`cosigned by ${cosigned.join(', ') || 'no witness of the policy'}: the policy's quorum (${this.policy.quorum}) is not met`);
    }
    if (failures.length > 0) throw new VerificationError(failures);

    // Verifications run one at a time, and each checked that its checkpoint extends the seen one: the seen one only grows.
    this.seen = { checkpoint, note: answer.checkpoint };
    await this.options.seen?.save({ origin: checkpoint.origin, tree_size: checkpoint.size, checkpoint: answer.checkpoint });
    return { verified: live.length, removed: receipts.length - live.length, treeSize: checkpoint.size, cosigned };
  }

  /**
   * Proves each event of a group of close timestamps a leaf of `checkpoint`: the inclusion paths of every
   * event in the group's time range come in one answer (the export's proofs sidecar, `GET /v1/ledger/proofs`), each event's hash
   * and leaf are recomputed here from the event as written and its receipt, and walked to the signed root.
   */
  private async proveIncluded(live: readonly LiveReceipt[], checkpoint: SignedCheckpoint, verifier: WebVerifier, failures: string[]): Promise<void> {
    const sidecar = await this.source.proofs({ start_date: (live[0] as LiveReceipt).event.timestamp, end_date: (live.at(-1) as LiveReceipt).event.timestamp, tree_size: checkpoint.size });
    const tree = await opened(sidecar.checkpoint, verifier, 'the checkpoint of the proofs');
    if (tree.origin !== checkpoint.origin || tree.size !== checkpoint.size || !sameBytes(tree.root, checkpoint.root)) {
      failures.push(`the proofs are of another tree than the checkpoint of ${checkpoint.size}`);
      return;
    }
    const paths = new Map(sidecar.proofs.map((p) => [p.event_id, p]));
    const combine = sharedNodes();
    for (const { event, receipt } of live) {
      const path = paths.get(event.id);
      if (!path) {
        failures.push(`event ${event.id}: the service proves no such event in the checkpoint of ${checkpoint.size}`);
        continue;
      }
      if (path.leaf_index !== receipt.leaf_index) failures.push(`event ${event.id}: its proof is of another leaf than its receipt (${path.leaf_index}, not ${receipt.leaf_index})`);
      const found = await inclusionFailures(event, { ...receipt, event_id: event.id, tree_size: checkpoint.size, inclusion_path: path.inclusion_path }, checkpoint, verifier.name, combine);
      failures.push(...found.map((f) => `event ${event.id}: ${f}`));
    }
  }

  /**
   * Records a failure for each event its producer did not sign: no signature, or one that does not
   * verify with the producer key over the event's content as recorded (what its leaf commits to).
   */
  private async producerSigned(live: readonly LiveReceipt[], producerKey: string, failures: string[]): Promise<void> {
    const key = await (this.producer ??= importProducerKey(producerKey).catch((error: unknown) => {
      this.producer = null;
      throw new TypeError(`the producer key to verify with is not an Ed25519 verifier key whose key id matches: ${error instanceof Error ? error.message : String(error)}`);
    }));
    for (const { event } of live) {
      const problem = await signatureProblem(event, key);
      if (problem === 'invalid') failures.push(`event ${event.id}: its producer signature does not verify with producer key ${producerKey.trim()} (its content is not what the producer signed)`);
      else if (problem !== null) failures.push(`event ${event.id}: ${problem === 'missing' ? 'it carries no producer signature' : 'its producer signature is malformed'}, though its API key is bound to producer key ${producerKey.trim()}`);
    }
  }

  /**
   * The newest signed checkpoint once it includes `seq` (and, with a policy, sits in an installation
   * checkpoint): the ledger signs within a round of a write, and witnesses cosign within theirs.
   */
  private async covering(verifier: WebVerifier, seq: number) {
    const deadline = Date.now() + (this.options.waitMs ?? 60_000);
    for (;;) {
      // 404 until the organization's first checkpoint is signed.
      const answer = await this.source.checkpoint().catch((error: unknown) => {
        if (error instanceof AuditLedgerError && error.status === 404) return null;
        throw error;
      });
      const checkpoint = answer && (await opened(answer.checkpoint, verifier, 'the newest checkpoint'));
      const origin = `${verifier.name}/${this.options.organization}`;
      if (checkpoint && checkpoint.origin !== origin) throw new VerificationError([`the checkpoint is of the log ${checkpoint.origin}, not of ${origin}`]);
      const witnessed = !this.policy || (answer?.installation?.witnessed ?? false);
      if (answer && checkpoint && checkpoint.size >= seq && witnessed) return { answer, checkpoint };
      if (Date.now() >= deadline) {
        throw new VerificationError([!checkpoint || checkpoint.size < seq
          ? `the newest signed checkpoint has ${checkpoint?.size ?? 0} events: sequence number ${seq} is not in it`
          : `no installation checkpoint witnessed by the policy's quorum includes the checkpoint of ${checkpoint.size}`]);
      }
      await sleep(500);
    }
  }

  /** Records a failure unless `checkpoint` is the seen one or extends it (a consistency proof from the service). */
  private async extendsSeen(checkpoint: SignedCheckpoint, verifier: WebVerifier, failures: string[]): Promise<void> {
    if (this.seen === undefined) {
      const stored = await this.options.seen?.load();
      this.seen = stored ? { checkpoint: await opened(stored.checkpoint, verifier, 'the checkpoint seen before'), note: stored.checkpoint } : null;
    }
    if (this.seen === null) return;
    const older = this.seen.checkpoint;
    if (older.origin !== checkpoint.origin) {
      failures.push(`the checkpoint is of ${checkpoint.origin}, the one seen before of ${older.origin}`);
      return;
    }
    if (older.size > checkpoint.size) {
      failures.push(`the log has ${checkpoint.size} events, fewer than the ${older.size} seen before: it was rewritten`);
      return;
    }
    const proof = older.size === checkpoint.size ? [] : (await this.source.consistency(older.size, checkpoint.size)).proof;
    if (!(await verifyConsistency(older, checkpoint, proof))) failures.push(`the checkpoint of ${checkpoint.size} does not extend the one of ${older.size} seen before: the log was rewritten`);
  }
}
