/**
 * Where streams get their events: the events this instance wrote lately are kept in memory as they are
 * stored (the writer hands them over, as it does to the ledger), and events read from the database for
 * one stream are kept for the next. So five streams of one organization read each event from the
 * database at most once between them, and a stream that keeps up with its organization on the writing
 * instance reads none (on FerretDB every event read costs its server about 0.1 ms of CPU: five streams
 * each reading every event took three quarters of the ingest rate away, BENCHMARKS.md). Bounded: the
 * newest `capacity` events, all organizations together; older ones are read again when needed.
 */
import { type EventDoc, eventHashesOfDoc, toEvent, toEventJson } from '../db/documents';
import type { EventHashes } from '../domain/ledger/eventHash';
import type { StreamItem } from '../domain/streamFormats';
import type { StreamStore } from '../db/streamStore';

/**
 * How long an event stays usable from memory: streams that keep up read it within a second or two;
 * after this, it is read from the database again. (Removals do not wait for it: a removal on any
 * instance, this one included, changes the organization's removal mark, `removals`.)
 */
const CACHE_TTL_MS = 60_000;

export class EventSource {
  /** By `<tenant>\n<seq>`, oldest first (a Map keeps insertion order), with when each was added (ms, monotonic). */
  private readonly recent = new Map<string, { doc: EventDoc; at: number }>();
  /** One database read at a time per organization: a second stream waits and then finds the events here. */
  private readonly reading = new Map<string, Promise<unknown>>();
  /** Each organization's removal mark as last read: its events in memory were read under it. */
  private readonly marks = new Map<string, string | null>();
  /** Bumped whenever events in memory are dropped for a removal: a read begun before is not kept. */
  private drops = 0;

  constructor(
    private readonly store: StreamStore,
    private readonly capacity = 5_000,
  ) {}

  /** Each event's receipt hash and JSON item, made once for all the streams that send it. */
  private readonly hashes = new WeakMap<EventDoc, EventHashes>();
  private readonly jsonItems = new WeakMap<EventDoc, string>();

  /** The event and its receipt (the OCSF format maps from it). */
  item(doc: EventDoc): StreamItem {
    return { event: toEvent(doc), receipt: { seq: doc.seq, leaf_index: doc.seq - 1, ...this.sha(doc) } };
  }

  /** The JSON format's item as text, `{"event":…,"receipt":…}`, written without parsing the stored metadata back. */
  jsonItem(doc: EventDoc): string {
    let text = this.jsonItems.get(doc);
    if (text === undefined) {
      const { event_sha256: sha, event_commitment: commitment, salt } = this.sha(doc);
      const v2 = commitment === undefined ? '' : `,"event_commitment":"${commitment}","salt":"${salt}"`;
      text = `{"event":${toEventJson(doc)},"receipt":{"seq":${doc.seq},"leaf_index":${doc.seq - 1},"event_sha256":"${sha}"${v2}}}`;
      this.jsonItems.set(doc, text);
    }
    return text;
  }

  private sha(doc: EventDoc): EventHashes {
    let hash = this.hashes.get(doc);
    if (hash === undefined) {
      hash = eventHashesOfDoc(doc);
      this.hashes.set(doc, hash);
    }
    return hash;
  }

  /**
   * The organizations with a stream running on this instance (StreamDeliverer's scan): only their events
   * are kept. Others' would only be dropped unread, at a Map insertion per event stored. An event not
   * kept is read from the database when a stream wants it, as after the time-to-live.
   */
  private streamed: ReadonlySet<string> = new Set();

  keepFor(tenants: ReadonlySet<string>): void {
    this.streamed = tenants;
  }

  /** Events stored (by this instance's writer, or read here), those of streamed organizations. */
  add(docs: readonly EventDoc[]): void {
    for (const doc of docs) {
      if (!this.streamed.has(doc.tenant)) continue;
      const key = `${doc.tenant}\n${doc.seq}`;
      this.recent.delete(key);
      this.recent.set(key, { doc, at: performance.now() });
    }
    while (this.recent.size > this.capacity) {
      const oldest = this.recent.keys().next();
      if (oldest.done) break;
      this.recent.delete(oldest.value);
    }
  }

  /** The events `from`..`to` of `tenant`, in order, up to the first one not stored. */
  async between(tenant: string, from: number, to: number): Promise<EventDoc[]> {
    const out = this.cached(tenant, from, to);
    if (out.length === to - from + 1) return out;
    const previous = this.reading.get(tenant) ?? Promise.resolve();
    const read = previous.catch(() => undefined).then(async () => {
      const start = from + out.length;
      // Another stream may have read them while this one waited.
      const found = this.cached(tenant, start, to);
      const dropsBefore = this.drops;
      const rest = found.length === to - start + 1 ? [] : await this.store.eventsBetween(tenant, start + found.length, to);
      // Not kept if a removal dropped the organization's events while it read: they may be removed ones.
      if (this.drops === dropsBefore) this.add(rest);
      return [...found, ...rest];
    });
    this.reading.set(tenant, read);
    try {
      return [...out, ...(await read)];
    } finally {
      if (this.reading.get(tenant) === read) this.reading.delete(tenant);
    }
  }

  private cached(tenant: string, from: number, to: number): EventDoc[] {
    const out: EventDoc[] = [];
    const fresh = performance.now() - CACHE_TTL_MS;
    for (let seq = from; seq <= to; seq++) {
      const entry = this.recent.get(`${tenant}\n${seq}`);
      if (!entry || entry.at < fresh) break;
      out.push(entry.doc);
    }
    return out;
  }

  /**
   * The organization's removal mark, read now. A stream reads it before it sends a batch and sends only
   * if it is the one it read before reading the batch's events: a removal on any instance changes it
   * after the tombstones are written and before the removal is answered, so a batch read before then is
   * read again from the database (where the removed events are tombstones), and everything this
   * instance held of the organization is dropped.
   */
  async removals(tenant: string): Promise<string | null> {
    const mark = await this.store.removalMark(tenant);
    // A mark never seen here says nothing of when the events held were read (the writer hands them over
    // unasked): they are dropped too, once.
    if (!this.marks.has(tenant) || this.marks.get(tenant) !== mark) {
      const prefix = `${tenant}\n`;
      for (const key of this.recent.keys()) if (key.startsWith(prefix)) this.recent.delete(key);
      this.drops++;
    }
    if (this.marks.size >= this.capacity) this.marks.clear();
    this.marks.set(tenant, mark);
    return mark;
  }
}
