/** The ledger's read side: the verifier key, checkpoints, inclusion and consistency proofs, per organization. */
import { AppError, MESSAGES } from '../domain/errors';
import { isEventId } from '../domain/event';
import type { TCheckpoint, TConsistencyProof, TInclusionProof, TInstallationInclusion, TLedgerSummary, TSidecarProof } from '../domain/ledger/schemas';
import { checkpointBody, noteText } from '../domain/ledger/witnessFormats';
import { checkpointProblem } from '../domain/ledger/checkpoint';
import { parseCheckpoint } from '../domain/ledger/formats';
import { entryBundle, parseTilePath } from '../domain/ledger/tilePaths';
import { entriesAt, TILE_WIDTH } from '../domain/ledger/tiles';
import { leafBytes, leafCommitOf } from '../domain/ledger/eventHash';
import { inclusionProof, leafHash, verifyInclusion } from '../domain/ledger/merkle';
import type { TEventFilters } from '../domain/event';
import { type EventDoc, eventHashesOfDoc, type LedgerCheckpointDoc, type LedgerEntryDoc } from '../db/documents';
import { type EventService, visibleTo } from './events';
import type { LedgerReader, TenantLedgerReader } from '../ledger/reader';
import type { Cosigned, Witnesses } from '../ledger/witnesses';
import { MissingTile } from '../ledger/tileReader';
import { INSTALLATION } from '../domain/ledger/log';
import type { Principal } from './auth';

const b64 = (hash: Buffer) => hash.toString('base64');

function checkpointView(log: TenantLedgerReader, doc: LedgerCheckpointDoc): TCheckpoint {
  return { origin: log.origin, tree_size: doc.size, root_hash: doc.root, checkpoint: doc.note };
}

function noCheckpoint(message: string, fields?: string[]): AppError {
  return new AppError('CHECKPOINT_NOT_FOUND', message, fields ? { fields } : {});
}

export class LedgerService {
  constructor(
    private readonly ledger: LedgerReader,
    private readonly events: EventService,
    private readonly witnesses: Witnesses | null,
  ) {}

  key(): { key_name: string; verifier_key: string } {
    const verifier = this.ledger.verifier;
    if (!verifier) throw new AppError('SERVICE_UNAVAILABLE', 'This process has no ledger key', { retryAfter: 60 });
    return { key_name: verifier.name, verifier_key: verifier.text };
  }

  /** The newest checkpoint, with its inclusion in the installation log (of `installationSize`, or the newest witnessed, else the newest). */
  async checkpoint(principal: Principal, installationSize?: number): Promise<TCheckpoint> {
    const log = this.ledger.of(principal.tenant);
    const newest = await log.newest();
    if (!newest) throw noCheckpoint('No checkpoint yet: the organization has no events');
    return { ...checkpointView(log, newest), ...(await this.witnessedView(newest, installationSize)) };
  }

  /** The checkpoint's inclusion in the installation log and the newest witnessed size: the newest witnessed checkpoint is looked up once for both. */
  private async witnessedView(checkpoint: LedgerCheckpointDoc, installationSize?: number): Promise<Pick<TCheckpoint, 'installation' | 'witnessed_tree_size'>> {
    const witnessed = (await this.witnesses?.newestWitnessed()) ?? null;
    const installation = await this.installation(checkpoint, installationSize, witnessed);
    // The installation checkpoint chosen may have been cosigned while this answer waited for it: newer.
    const newest = Math.max(witnessed?.checkpoint.size ?? 0, installation?.witnessed ? installation.tree_size : 0);
    return { installation, witnessed_tree_size: newest > 0 ? newest : null };
  }

  async summary(principal: Principal): Promise<TLedgerSummary> {
    const log = this.ledger.of(principal.tenant);
    const newest = await log.newest();
    const witnesses = this.witnesses ? await this.witnesses.refresh() : [];
    const checkpoint = newest ? { ...checkpointView(log, newest), signed_at: newest.created_at.toISOString(), ...(await this.witnessedView(newest)) } : null;
    return { ...this.key(), checkpoint, witnesses, quorum: this.witnesses?.policy.quorum ?? null };
  }

  /**
   * The inclusion of an organization checkpoint in the installation log: in the installation checkpoint
   * of `size`, or the newest witnessed one that includes it, or the newest (waiting for it as a proof
   * waits for its checkpoint). Null while no installation checkpoint includes it. `witnessed`: the newest
   * witnessed installation checkpoint, when the caller looked it up already.
   */
  async installation(checkpoint: LedgerCheckpointDoc, size?: number, witnessed?: Cosigned | null): Promise<TInstallationInclusion | null> {
    const installation = this.ledger.installation();
    const entry = await this.ledger.entryOf(checkpoint);
    if (!entry) {
      if (size === undefined) return null;
      throw noCheckpoint('No installation checkpoint includes this checkpoint yet; retry in a second', ['installation_size']);
    }
    let chosen: LedgerCheckpointDoc | null;
    if (size !== undefined) {
      chosen = await this.signedOfSize(installation, size, 'installation_size');
      if (chosen.size <= entry._id) throw new AppError('VALIDATION_FAILED', `Invalid request: installation_size must be larger than ${entry._id}: the installation tree of size ${size} does not include this checkpoint`, { fields: ['installation_size'] });
    } else {
      if (witnessed === undefined) witnessed = (await this.witnesses?.newestWitnessed()) ?? null;
      chosen = witnessed && witnessed.checkpoint.size > entry._id ? witnessed.checkpoint : await installation.covering(entry._id);
    }
    if (!chosen) return null;
    const body = checkpointBody(checkpoint.note);
    const proven = await this.provenInclusion(installation, entry, body, chosen);
    if (!proven) {
      if (size !== undefined) throw noCheckpoint(`The installation tree of size ${size} does not prove this checkpoint: the stored installation log does not give what was signed (its operator should run \`ledger audit\`)`, ['installation_size']);
      return null;
    }
    const cosigned = witnessed?.checkpoint._id === chosen._id ? witnessed : await this.witnesses?.cosigned(chosen);
    return {
      origin: installation.origin,
      tree_size: chosen.size,
      root_hash: b64(proven.root),
      checkpoint: cosigned?.note ?? chosen.note,
      witnessed: cosigned?.witnessed ?? false,
      entry_index: entry._id,
      entry: body,
      inclusion_path: proven.path.map(b64),
    };
  }

  /**
   * The entry's inclusion path in the installation checkpoint `chosen`, checked before it is answered:
   * the entry holds the organization checkpoint's body, `chosen` is signed by this installation's key
   * for the installation log (where this process has the key; its stored size and root are the signed
   * ones), and the path from the entry's leaf gives that root. Null otherwise (the stored installation
   * log does not give what was signed: an entry written in the wrong place, tiles changed): no answer
   * carries a proof that does not verify, nor calls such an entry witnessed.
   */
  private async provenInclusion(installation: TenantLedgerReader, entry: LedgerEntryDoc, body: string, chosen: LedgerCheckpointDoc): Promise<{ root: Buffer; path: Buffer[] } | null> {
    const index = entry._id;
    if (entry.body !== body || !Number.isInteger(index) || index < 0 || index >= chosen.size) return null;
    const verifier = this.ledger.verifier;
    let root: Buffer;
    try {
      if (verifier && checkpointProblem(chosen, installation.origin, verifier) !== null) return null;
      const signed = parseCheckpoint(noteText(chosen.note));
      if (signed.origin !== installation.origin || signed.size !== chosen.size) return null;
      root = Buffer.from(signed.root);
    } catch {
      return null;
    }
    let path: Buffer[];
    try {
      path = await installation.inclusion(index, chosen.size);
    } catch (error) {
      if (error instanceof MissingTile || error instanceof RangeError) return null;
      throw error;
    }
    return verifyInclusion(index, chosen.size, leafHash(body), path, root) ? { root, path } : null;
  }

  /** A signed checkpoint of exactly `size` leaves, or 404. */
  private async signedOfSize(log: TenantLedgerReader, size: number, field: string): Promise<LedgerCheckpointDoc> {
    const found = await log.ofSize(size);
    if (!found) throw noCheckpoint(`No checkpoint of size ${size} was signed`, [field]);
    return found;
  }

  async proof(principal: Principal, id: string, treeSize: number | undefined): Promise<TInclusionProof> {
    // The event and, unless a size is asked for, the newest checkpoint at once: usually it covers the event.
    const log = this.ledger.of(principal.tenant);
    const [doc, newest] = await Promise.all([
      isEventId(id) ? this.events.readerFor(principal).get(id) : null,
      treeSize === undefined ? log.newest() : null,
    ]);
    if (!doc || !visibleTo(principal, doc)) throw new AppError('EVENT_NOT_FOUND', MESSAGES.eventNotFound);
    const index = doc.seq - 1;
    const checkpoint = treeSize !== undefined
      ? await this.signedOfSize(log, treeSize, 'tree_size')
      : newest && newest.size > index ? newest : await log.covering(index);
    if (!checkpoint) throw noCheckpoint('No checkpoint includes this event yet; retry in a second');
    if (checkpoint.size <= index) {
      throw new AppError('VALIDATION_FAILED', `Invalid request: tree_size must be larger than ${index}: the tree of size ${checkpoint.size} does not include this event`, { fields: ['tree_size'] });
    }
    const hashes = eventHashesOfDoc(doc);
    const path = await log.inclusion(index, checkpoint.size);
    const leaf = leafBytes(doc.tenant, doc.seq, leafCommitOf(hashes));
    return {
      event_id: doc._id,
      leaf_index: index,
      tree_size: checkpoint.size,
      ...hashes,
      leaf: b64(leaf),
      inclusion_path: path.map(b64),
      checkpoint: checkpoint.note,
    };
  }

  /**
   * The proofs sidecar of an export with these filters: the checkpoint (of `treeSize`, or the newest
   * once it includes every event stored when this was called) and, for each event the same export
   * pinned to that checkpoint's size returns, in the same order, its inclusion path in that tree.
   * Holds an export slot while it streams.
   */
  async proofs(principal: Principal, filters: TEventFilters, treeSize: number | undefined): Promise<{ checkpoint: LedgerCheckpointDoc; proofs: AsyncGenerator<TSidecarProof> }> {
    const log = this.ledger.of(principal.tenant);
    let checkpoint: LedgerCheckpointDoc | null;
    if (treeSize !== undefined) checkpoint = await this.signedOfSize(log, treeSize, 'tree_size');
    else {
      const newestSeq = await this.events.readerFor(principal).newestSeq();
      if (newestSeq === 0) throw noCheckpoint('No checkpoint yet: the organization has no events');
      checkpoint = await log.covering(newestSeq - 1);
      if (!checkpoint) throw noCheckpoint('No checkpoint includes the newest events yet; retry in a second');
    }
    const { docs } = await this.events.export(principal, filters, checkpoint.size);
    const size = checkpoint.size;
    const nodes = log.nodes(size);
    async function* prove(): AsyncGenerator<TSidecarProof> {
      for await (const doc of docs as AsyncIterable<EventDoc>) {
        const index = doc.seq - 1;
        yield { event_id: doc._id, leaf_index: index, ...(doc.salt === undefined ? {} : { salt: doc.salt }), inclusion_path: (await inclusionProof(nodes, index, size)).map(b64) };
      }
    }
    return { checkpoint, proofs: prove() };
  }

  /**
   * A c2sp.org/tlog-tiles resource of `tenant`'s log (an organization's, or INSTALLATION): `checkpoint`
   * (for the installation log, with the witnesses' cosignatures), `tile/<L>/<N>[.p/<W>]` or
   * `tile/entries/<N>[.p/<W>]`. Only what the newest checkpoint's tree holds is served: nothing
   * unsigned. Entry bundles hold the leaf bytes that are hashed: the events' leaves (the RFC 8785 JSON of
   * their commitments) or the installation log's entries (organization checkpoint bodies).
   */
  async tileResource(tenant: string, path: string): Promise<{ body: string | Buffer; immutable: boolean }> {
    const log = this.ledger.of(tenant);
    const newest = await log.newest();
    const missing = () => new AppError('NOT_FOUND', `No such resource of the log: ${path}`);
    if (path === 'checkpoint') {
      if (!newest) throw missing();
      const cosigned = tenant === INSTALLATION ? await this.witnesses?.cosigned(newest) : undefined;
      return { body: cosigned?.note ?? newest.note, immutable: false };
    }
    const request = path.startsWith('tile/') ? parseTilePath(path.slice('tile/'.length)) : null;
    if (!request || !newest) throw missing();
    const { level, index, width } = request;
    const first = index * TILE_WIDTH;
    const immutable = width === TILE_WIDTH;
    if (level === 'entries') {
      if (first + width > newest.size) throw missing();
      if (tenant === INSTALLATION) {
        const entries = await this.ledger.entriesBetween(first, first + width - 1);
        if (entries.length !== width) throw missing();
        return { body: entryBundle(entries.map((e) => Buffer.from(e.body, 'utf8'))), immutable };
      }
      const leaves = await log.leafCommitsBetween(first + 1, first + width);
      if (leaves.length !== width) throw missing();
      return { body: entryBundle(leaves.map((leaf) => leafBytes(tenant, leaf.seq, leaf.commit))), immutable };
    }
    if (entriesAt(newest.size, level) < first + width) throw missing();
    try {
      return { body: Buffer.concat(await log.tile(level, index, width)), immutable };
    } catch (error) {
      if (error instanceof MissingTile) throw missing();
      throw error;
    }
  }

  async consistency(principal: Principal, from: number, to: number | undefined): Promise<TConsistencyProof> {
    const log = this.ledger.of(principal.tenant);
    const target = to === undefined ? await log.newest() : await this.signedOfSize(log, to, 'to');
    if (!target) throw noCheckpoint('No checkpoint yet: the organization has no events');
    if (from > target.size) throw new AppError('VALIDATION_FAILED', `Invalid request: from must be at most ${target.size}, the size of the tree it is proven consistent with`, { fields: ['from'] });
    const proof = await log.consistency(from, target.size);
    return { from, to: target.size, proof: proof.map(b64), checkpoint: target.note };
  }
}
