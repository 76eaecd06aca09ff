/**
 * The service instances on one database, and which one of them writes each organization's events.
 *
 * Each instance announces itself in `instances` (its internal address, with the installation's MAC of
 * it: src/ingest/instanceAuth.ts; entries without a valid one are ignored) and bumps a counter
 * there every second. Every instance reads the whole collection at each of its own beats and takes an
 * instance for live while it sees that counter move, timed by its own monotonic clock: no two clocks
 * are ever compared. Of the live instances, `writers` (INGEST_WRITERS, default 1) write events: those
 * ranked first by the SHA-256 of their id. The writer of an organization is chosen among them by
 * rendezvous hashing (highest SHA-256 of organization and writer id), so every instance with the same
 * view picks the same one, organizations spread evenly, and a writer joining or leaving moves only its
 * share. One writer is the default because rounds are the database's unit of work: one instance's
 * rounds carry every organization's events together, while N writers each send rounds N times smaller
 * (BENCHMARKS.md: with 16 organizations on FerretDB, four writers stored a third of what one did).
 *
 * Views can differ for a moment (an instance just started, stopped or died). Then two instances may
 * write one organization at once, which is safe: the unique (tenant, seq) index still decides every
 * sequence number (src/ingest/eventWriter.ts). Ownership only keeps them from racing all the time.
 */
import { createHash, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { InstanceDoc } from '../db/documents';
import type { InstanceList } from '../db/instanceList';
import { describeDbError } from '../db/errors';
import type { InstanceAuth } from './instanceAuth';

export interface Peer {
  id: string;
  url: string;
}

const BEAT_MS = 1000;
/** An instance whose counter has not moved for this long is taken for gone. */
const SILENT_MS = 5000;
/** Documents of instances silent for this long are deleted (crashed instances leave theirs behind). */
const FORGET_MS = 10 * 60_000;
/** Owners are remembered per organization until the live set changes, up to this many. */
const MAX_CACHED_OWNERS = 100_000;

export class Instances {
  readonly self: Peer = { id: randomUUID(), url: '' };
  private readonly seen = new Map<string, { doc: InstanceDoc; changedAt: number }>();
  /** Peers that failed a forward: left out until this time (monotonic ms). */
  private readonly down = new Map<string, number>();
  private live: Peer[] = [this.self];
  /** The live instances that write, chosen from `live`. */
  private writing: Peer[] = [this.self];
  private readonly owners = new Map<string, Peer>();
  private timer: NodeJS.Timeout | undefined;
  private beats = 0;
  /** The heartbeat running now, which `leave` waits for (it could otherwise announce this instance again). */
  private beating: Promise<void> | null = null;
  private leaving = false;
  /** Entries without a valid MAC, already logged (each is logged once). */
  private readonly refused = new Set<string>();

  constructor(
    private readonly list: InstanceList,
    private readonly auth: InstanceAuth,
    private readonly log: Logger,
    private readonly writers = 1,
  ) {}

  /** Announces this instance, reachable at `url`, and starts the heartbeat. Until then it is alone. */
  async join(url: string): Promise<void> {
    this.self.url = url;
    this.leaving = false;
    await this.list.add(this.doc());
    await this.refresh();
    this.timer = setInterval(() => void this.beat(), BEAT_MS);
    this.timer.unref();
  }

  /**
   * Stops announcing this instance; the others stop sending it work at their next beat, which this
   * waits for when there are others, so that they do not find its port closed first.
   */
  async leave(): Promise<void> {
    const others = this.live.length > 1;
    this.leaving = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.beating;
    this.setLive([this.self]);
    try {
      await this.list.remove([this.self.id]);
    } catch (error) {
      this.log.warn({ error: describeDbError(error) }, 'could not remove this instance from the instance list');
    }
    if (others) await new Promise((resolve) => setTimeout(resolve, BEAT_MS + 200));
  }

  get liveCount(): number {
    return this.live.length;
  }

  /** This instance's part of an installation-wide limit: 1/N of it where N instances are live (src/http/rateLimit.ts). */
  get share(): number {
    return 1 / this.live.length;
  }

  /** The instance that writes `tenant`'s events, in this instance's view. */
  ownerOf(tenant: string): Peer {
    if (this.writing.length === 1) return this.writing[0] ?? this.self;
    let owner = this.owners.get(tenant);
    if (!owner) {
      let best = '';
      for (const peer of this.writing) {
        const score = createHash('sha256').update(tenant).update('\n').update(peer.id).digest('hex');
        if (score > best) [best, owner] = [score, peer];
      }
      owner ??= this.self;
      if (this.owners.size >= MAX_CACHED_OWNERS) this.owners.clear();
      this.owners.set(tenant, owner);
    }
    return owner;
  }

  /**
   * Whether this instance runs the background job `key` (a log stream): rendezvous hashing over every
   * live instance, so each job runs in one place in any one view and jobs spread over all instances.
   */
  runs(key: string): boolean {
    let best = '';
    let chosen = this.self.id;
    for (const peer of this.live) {
      const score = createHash('sha256').update(key).update('\n').update(peer.id).digest('hex');
      if (score > best) [best, chosen] = [score, peer.id];
    }
    return chosen === this.self.id;
  }

  /** A forward to `peer` failed: its organizations are written elsewhere until it has had time to recover. */
  markDown(peer: Peer): void {
    this.down.set(peer.id, performance.now() + SILENT_MS);
    this.setLive(this.live.filter((p) => p.id !== peer.id));
  }

  private doc(): InstanceDoc {
    return { _id: this.self.id, url: this.self.url, mac: this.auth.mac('instance', this.self.id, this.self.url), beat: this.beats, started_at: new Date() };
  }

  /** Whether an entry was written by an instance of this installation (one holding its key). */
  private authentic(doc: InstanceDoc): boolean {
    if (this.auth.check(doc.mac, 'instance', doc._id, doc.url)) return true;
    if (!this.refused.has(doc._id)) {
      if (this.refused.size >= 1000) this.refused.clear();
      this.refused.add(doc._id);
      this.log.error({ instance: doc._id, url: doc.url }, 'an entry of the instance list is not signed with this installation\'s key: ignored (someone wrote it into the database)');
    }
    return false;
  }

  private beat(): Promise<void> {
    this.beating ??= this.beatOnce().finally(() => { this.beating = null; });
    return this.beating;
  }

  private async beatOnce(): Promise<void> {
    try {
      this.beats++;
      // Another instance deleted us after a long silence (a paused process, say): announce again.
      if (!(await this.list.beat(this.self.id, this.beats)) && !this.leaving) await this.list.add(this.doc());
      if (!this.leaving) await this.refresh();
    } catch (error) {
      this.log.warn({ error: describeDbError(error) }, 'instance heartbeat failed');
    }
  }

  private async refresh(): Promise<void> {
    const docs = (await this.list.all()).filter((doc) => this.authentic(doc));
    const now = performance.now();
    const present = new Set<string>();
    const forgotten: string[] = [];
    for (const doc of docs) {
      present.add(doc._id);
      const before = this.seen.get(doc._id);
      if (!before || before.doc.beat !== doc.beat) this.seen.set(doc._id, { doc, changedAt: now });
      else if (now - before.changedAt > FORGET_MS) forgotten.push(doc._id);
    }
    for (const id of this.seen.keys()) if (!present.has(id)) this.seen.delete(id);
    for (const [id, until] of this.down) if (until <= now) this.down.delete(id);
    const others = [...this.seen.values()]
      .filter(({ doc, changedAt }) => doc._id !== this.self.id && now - changedAt < SILENT_MS && !this.down.has(doc._id))
      .map(({ doc }) => ({ id: doc._id, url: doc.url }));
    this.setLive([this.self, ...others]);
    await this.list.remove(forgotten);
  }

  private setLive(live: Peer[]): void {
    const ids = (peers: Peer[]) => peers.map((p) => p.id).sort().join(',');
    if (ids(live) === ids(this.live)) return;
    this.owners.clear();
    this.live = live;
    const rank = (peer: Peer) => createHash('sha256').update(peer.id).digest('hex');
    this.writing = [...live].sort((a, b) => (rank(a) < rank(b) ? 1 : -1)).slice(0, this.writers);
  }
}
