/** The ledger's read side: the verifier key, checkpoints, inclusion and consistency proofs, per organization. */
import { AppError, MESSAGES } from '../domain/errors';
import { isEventId } from '../domain/event';
import { leafBytes } from '../domain/ledger/eventHash';
import type { TCheckpoint, TConsistencyProof, TInclusionProof, TLedgerSummary, TSidecarProof } from '../domain/ledger/schemas';
import { inclusionProof } from '../domain/ledger/merkle';
import type { TEventFilters } from '../domain/event';
import { type EventDoc, eventSha256OfDoc, type LedgerCheckpointDoc } from '../db/documents';
import type { EventService } from './events';
import type { LedgerReader, TenantLedgerReader } from '../ledger/reader';
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
  ) {}

  key(): { key_name: string; verifier_key: string } {
    const verifier = this.ledger.verifier;
    if (!verifier) throw new AppError('SERVICE_UNAVAILABLE', 'This process has no ledger key', { retryAfter: 60 });
    return { key_name: verifier.name, verifier_key: verifier.text };
  }

  async checkpoint(principal: Principal): Promise<TCheckpoint> {
    const log = this.ledger.of(principal.tenant);
    const newest = await log.newest();
    if (!newest) throw noCheckpoint('No checkpoint yet: the organization has no events');
    return checkpointView(log, newest);
  }

  async summary(principal: Principal): Promise<TLedgerSummary> {
    const log = this.ledger.of(principal.tenant);
    const newest = await log.newest();
    return { ...this.key(), checkpoint: newest ? { ...checkpointView(log, newest), signed_at: newest.created_at.toISOString() } : null };
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
    if (!doc) throw new AppError('EVENT_NOT_FOUND', MESSAGES.eventNotFound);
    const index = doc.seq - 1;
    const checkpoint = treeSize !== undefined
      ? await this.signedOfSize(log, treeSize, 'tree_size')
      : newest && newest.size > index ? newest : await log.covering(index);
    if (!checkpoint) throw noCheckpoint('No checkpoint includes this event yet; retry in a second');
    if (checkpoint.size <= index) {
      throw new AppError('VALIDATION_FAILED', `Invalid request: the tree of size ${checkpoint.size} does not include this event (leaf ${index})`, { fields: ['tree_size'] });
    }
    const eventSha256 = eventSha256OfDoc(doc);
    const path = await log.inclusion(index, checkpoint.size);
    return {
      event_id: doc._id,
      leaf_index: index,
      tree_size: checkpoint.size,
      event_sha256: eventSha256,
      leaf: b64(leafBytes(doc.tenant, doc.seq, eventSha256)),
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
        yield { event_id: doc._id, leaf_index: index, inclusion_path: (await inclusionProof(nodes, index, size)).map(b64) };
      }
    }
    return { checkpoint, proofs: prove() };
  }

  async consistency(principal: Principal, from: number, to: number | undefined): Promise<TConsistencyProof> {
    const log = this.ledger.of(principal.tenant);
    const target = to === undefined ? await log.newest() : await this.signedOfSize(log, to, 'to');
    if (!target) throw noCheckpoint('No checkpoint yet: the organization has no events');
    if (from > target.size) throw new AppError('VALIDATION_FAILED', `Invalid request: from (${from}) must not be larger than to (${target.size})`, { fields: ['from'] });
    const proof = await log.consistency(from, target.size);
    return { from, to: target.size, proof: proof.map(b64), checkpoint: target.note };
  }
}
