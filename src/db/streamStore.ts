/**
 * Log streams' documents: configurations (written by the API, bound to one organization here) and
 * delivery progress (written by the delivering instance), and the reads a delivery makes.
 */
import type { Collections } from './database';
import { type EventDoc, isTombstone, LIVE, type StoredEvent, type StreamDoc, type StreamProgressDoc } from './documents';
import { DUPLICATE_KEY } from './errors';
import type { ForeignRows } from './foreignRows';

const DURABLE = { writeConcern: { w: 'majority' as const, j: true } };

/** One organization's streams, as the API manages them. */
export class TenantStreams {
  constructor(
    private readonly c: Collections,
    readonly tenant: string,
  ) {}

  /** Oldest first. */
  list(): Promise<StreamDoc[]> {
    return this.c.streams.find({ tenant: this.tenant }).sort({ created_at: 1 }).toArray();
  }

  get(id: string): Promise<StreamDoc | null> {
    return this.c.streams.findOne({ _id: id, tenant: this.tenant });
  }

  /** Inserts in the first free place of `places`; false when every one is taken. */
  async insert(doc: Omit<StreamDoc, 'slot'>, places: number): Promise<boolean> {
    const taken = new Set((await this.list()).map((s) => s.slot));
    for (let slot = 0; slot < places; slot++) {
      if (taken.has(slot)) continue;
      try {
        await this.c.streams.insertOne({ ...doc, slot }, DURABLE);
        return true;
      } catch (error) {
        // Another create took this place first: try the next.
        if ((error as { code?: number }).code !== DUPLICATE_KEY) throw error;
      }
    }
    return false;
  }

  /** Null: no such stream of this organization. */
  async setPaused(id: string, paused: boolean): Promise<StreamDoc | null> {
    const { matchedCount } = await this.c.streams.updateOne({ _id: id, tenant: this.tenant }, { $set: { paused } }, DURABLE);
    return matchedCount ? this.get(id) : null;
  }

  /** Records a "Retry now" (the delivering instance answers it at its next scan); null: no such stream of this organization. */
  async requestRetry(id: string, at: Date): Promise<StreamDoc | null> {
    const { matchedCount } = await this.c.streams.updateOne({ _id: id, tenant: this.tenant }, { $set: { retry_requested_at: at } }, DURABLE);
    return matchedCount ? this.get(id) : null;
  }

  /** Deletes the stream and its progress; false when there was none. */
  async remove(id: string): Promise<boolean> {
    const { deletedCount } = await this.c.streams.deleteOne({ _id: id, tenant: this.tenant }, DURABLE);
    await this.c.streamProgress.deleteOne({ _id: id, tenant: this.tenant });
    return deletedCount > 0;
  }

  /** Progress of these streams, by id. */
  async progress(ids: string[]): Promise<Map<string, StreamProgressDoc>> {
    const found = await Promise.all(ids.map((id) => this.c.streamProgress.findOne({ _id: id, tenant: this.tenant })));
    return new Map(found.filter((doc): doc is StreamProgressDoc => doc !== null).map((doc) => [doc._id, doc]));
  }

  /** The event at `seq`, if stored and not removed (the lag's age). */
  eventAt(seq: number): Promise<EventDoc | null> {
    return this.c.events.findOne({ tenant: this.tenant, seq, ...LIVE });
  }
}

/** What the delivering instances read and write, across organizations. */
export class StreamStore {
  constructor(
    private readonly c: Collections,
    /**
     * Read a run of sequence numbers one point read at a time, a few at once: on FerretDB, whose range
     * reads load every event of the organization (../shared/STACK-NOTES.md), where point reads on
     * `seq` reach the GIN index. MongoDB serves the range from the (tenant, seq) index.
     */
    private readonly pointReads: boolean,
    /** Only the service's own rows are delivered (db/rowMacs.ts). */
    private readonly foreign: ForeignRows | null = null,
  ) {}

  /** Whether a row may be delivered (or skipped as removed): the service's own; a foreign one is named. */
  private own(doc: StoredEvent): boolean {
    return this.foreign?.own(doc, 'a stream') ?? true;
  }

  forTenant(tenant: string): TenantStreams {
    return new TenantStreams(this.c, tenant);
  }

  /** Every stream of the installation: a handful per organization, read whole at each scan. */
  all(): Promise<StreamDoc[]> {
    return this.c.streams.find({}).toArray();
  }

  progress(id: string): Promise<StreamProgressDoc | null> {
    return this.c.streamProgress.findOne({ _id: id });
  }

  async saveProgress(doc: StreamProgressDoc): Promise<void> {
    await this.c.streamProgress.replaceOne({ _id: doc._id }, doc, { upsert: true, ...DURABLE });
  }

  /**
   * The organization's removal mark (RetentionStore.counted), or null before any removal: a stream that
   * holds events in memory sends them only while the mark is the one it saw before reading them.
   */
  async removalMark(tenant: string): Promise<string | null> {
    return (await this.c.retentionState.findOne({ _id: tenant }, { projection: { removal_mark: 1 } }))?.removal_mark ?? null;
  }

  /**
   * How many numbers from `from` on (up to `to`) in a row hold tombstones (events pruned or erased): a
   * stream skips them instead of waiting for them. Read only when the next number holds no event.
   */
  async removedRun(tenant: string, from: number, to: number): Promise<number> {
    const removed = await this.c.eventSlots.find({ tenant, seq: { $gte: from, $lte: to }, removed: { $exists: true } }).sort({ seq: 1 }).toArray();
    let run = 0;
    while (run < removed.length && (removed[run] as StoredEvent).seq === from + run && this.own(removed[run] as StoredEvent)) run++;
    return run;
  }

  /** The events `from`..`to` of `tenant` in sequence order, up to the first one not stored, removed or foreign. */
  async eventsBetween(tenant: string, from: number, to: number): Promise<EventDoc[]> {
    if (to < from) return [];
    const run: EventDoc[] = [];
    for (const doc of await this.slotsBetween(tenant, from, to)) {
      if (doc.seq !== from + run.length || isTombstone(doc) || !this.own(doc)) break;
      run.push(doc);
    }
    return run;
  }

  private async slotsBetween(tenant: string, from: number, to: number): Promise<StoredEvent[]> {
    if (!this.pointReads) return this.c.eventSlots.find({ tenant, seq: { $gte: from, $lte: to } }, { batchSize: to - from + 1 }).sort({ seq: 1 }).toArray();
    const found: (StoredEvent | null)[] = new Array<StoredEvent | null>(to - from + 1).fill(null);
    let next = from;
    const reader = async () => {
      while (next <= to) {
        const seq = next++;
        found[seq - from] = await this.c.eventSlots.findOne({ tenant, seq });
      }
    };
    await Promise.all(Array.from({ length: Math.min(8, to - from + 1) }, reader));
    const end = found.indexOf(null);
    return (end === -1 ? found : found.slice(0, end)) as StoredEvent[];
  }
}
