/**
 * The real system the model is held against: the service started with the test harness on a database of
 * its own that outlives it (so a restart is a close and a start on the same data, and a second instance
 * is another app on it), a moved clock shared by every instance, the organization's owner signed in to
 * the dashboard, an API key, the operator's command line, and a webhook receiver for a log stream.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { Webhook } from 'standardwebhooks';
import { randomBytes } from 'node:crypto';
import { privateKeyText, type Signer, signerFromSeed } from '../../src/domain/ledger/note';
import { call, type ApiResponse } from '../helpers/api';
import { mongoUri, startTestApp, TEST_LEDGER_SEED, TEST_LEDGER_SIGNER, type TestApp, uniqueDbName } from '../helpers/harness';
import { runCli } from '../helpers/processes';
import { Receiver } from '../helpers/streamReceivers';
import { failure, uniqueEmail, WebSession } from '../helpers/webSession';
import { quietFor } from '../helpers/waiting';

export const VERIFIER_KEY = TEST_LEDGER_SIGNER.text;
const PASSWORD = 'correct horse battery staple';

/** One accepted webhook request: when it arrived (wall clock) and its items. */
export interface Arrival {
  at: number;
  items: { event: Record<string, unknown>; receipt: { leaf_index: number } }[];
}

export interface ModelStream {
  id: string;
  receiver: Receiver;
  arrivals: Arrival[];
}

/** What the raw events collection holds at a sequence number: an event or a tombstone (any document counts). */
export interface SlotDoc {
  _id: string;
  seq: number;
  removed?: unknown;
  [field: string]: unknown;
}

/** How a retention step is asked for: the owner's dashboard (tRPC), or /v1/retention with a key that has `retention:manage`. */
export type RetentionVia = 'dashboard' | 'rest';

export type EraseInput = ({ actor_id: string } | { event_ids: string[] }) & { reason: 'data_subject_request' };
/** An answer of a retention call: the result, or the refusal's status and code. */
export type Answer<T> = { ok: true; value: T } | { ok: false; status: number | undefined; code: string | undefined; message: string };
export interface PolicyView {
  days: number | null;
  pending: { days: number | null; effective_at: string } | null;
}

/** The second organization (plantForeign's copies between organizations): its id and an API key. */
export interface OtherOrg {
  id: string;
  key: string;
}

export class System {
  second: TestApp | null = null;
  stream: ModelStream | null = null;
  /** The second organization, made when a plantForeign command first needs one. */
  other: OtherOrg | null = null;
  /** The other organization's (sequence number → event id) ever seen: as `seqIds`. */
  readonly otherSeqIds = new Map<number, string>();
  /** Every (sequence number → event id) ever seen in the database: a number must never change hands. */
  readonly seqIds = new Map<number, string>();
  /** Problems the harness reported when closing an app (queries no declared index serves): printed, not failed on. */
  readonly notes: string[] = [];
  /** How many CLI exports were made (each to a file of its own). */
  exports = 0;
  private owner: WebSession | null = null;
  private restKey: string | null = null;
  /** A second key of the organization, bound to a producer's key (signedWrite), made on first use. */
  private producerKey: { key: string; signer: Signer } | null = null;
  private ownerUrl = '';
  private loggedInAt = Number.NaN;

  private constructor(
    readonly dbName: string,
    readonly clock: { now: number },
    public app: TestApp,
    readonly orgId: string,
    readonly key: string,
    readonly email: string,
    readonly dir: string,
    private readonly admin: MongoClient,
  ) {}

  /** A new database, the service on it, an owner who signed up (and so an organization), and an API key. */
  static async start(now: number): Promise<System> {
    const dbName = uniqueDbName('model');
    const clock = { now };
    const admin = await MongoClient.connect(mongoUri());
    const app = await startApp(dbName, clock).catch(async (error: unknown) => {
      await admin.close();
      throw error;
    });
    const owner = new WebSession(app.url);
    const email = uniqueEmail('model-owner');
    let orgId: string;
    let key: string;
    try {
      await owner.signup(email, PASSWORD, 'Modelled');
      orgId = ((await owner.client.account.me.query()) as { organization: { id: string } }).organization.id;
      ({ key } = await app.key(orgId));
    } catch (error) {
      await app.close().catch(() => undefined);
      await admin.db(dbName).dropDatabase().catch(() => undefined);
      await admin.close();
      throw error;
    }
    const dir = mkdtempSync(join(tmpdir(), 'model-'));
    writeFileSync(join(dir, 'ledger-key'), `${privateKeyText(TEST_LEDGER_SIGNER.name, TEST_LEDGER_SEED)}\n`, { mode: 0o600 });
    const system = new System(dbName, clock, app, orgId, key, email, dir, admin);
    system.owner = owner;
    system.ownerUrl = app.url;
    system.loggedInAt = now;
    return system;
  }

  /** The owner's dashboard session on the primary instance, signed in again when the clock or the instance moved. */
  async session(): Promise<WebSession> {
    if (!this.owner || this.ownerUrl !== this.app.url || this.loggedInAt !== this.clock.now) {
      const owner = new WebSession(this.app.url);
      await owner.login(this.email, PASSWORD);
      this.owner = owner;
      this.ownerUrl = this.app.url;
      this.loggedInAt = this.clock.now;
    }
    return this.owner;
  }

  /** A request with the API key (or `key`), to the primary or the second instance; a 429 of the rate limit is waited out. */
  async api(path: string, options: { body?: unknown; headers?: Record<string, string>; via?: 'primary' | 'second'; method?: string; key?: string } = {}): Promise<ApiResponse<any>> {
    const base = options.via === 'second' ? (this.second as TestApp).url : this.app.url;
    for (let attempt = 0; ; attempt++) {
      const res = await call(`${base}${path}`, { key: options.key ?? this.key, body: options.body, headers: options.headers, method: options.method });
      if (res.status !== 429 || res.body?.code !== 'RATE_LIMITED' || attempt >= 10) return res;
      // The per-key rate limiter reads the wall clock (src/http/rateLimit.ts), not the moved clock: its time must pass.
      await quietFor(1000 * Number(res.headers.get('retry-after') ?? 1), 'the rate limiter refills on the wall clock');
    }
  }

  /**
   * A key with `retention:manage` (README, "Retention over REST"), which only an owner can give: made
   * through the dashboard when first needed (it records an entry, so not before: a run must be able to
   * begin the organization's log from a second instance).
   */
  private async retentionKey(): Promise<string> {
    if (this.restKey === null) {
      const owner = await this.session();
      this.restKey = (await owner.client.dashboard.keys.create.mutate({ name: 'retention automation', scopes: ['retention:manage'] })).key;
    }
    return this.restKey;
  }

  /**
   * The key bound to a producer (docs/trust-model.md, "Producer signatures"): made through the dashboard and
   * bound with PUT /v1/producer-key before its first event, when first needed (both record entries).
   */
  async producer(): Promise<{ key: string; signer: Signer }> {
    if (this.producerKey === null) {
      const owner = await this.session();
      const { key } = await owner.client.dashboard.keys.create.mutate({ name: 'signing producer' });
      const signer = signerFromSeed('producer.model', randomBytes(32));
      const bound = await this.api('/v1/producer-key', { method: 'PUT', body: { producer_key: signer.text }, key });
      if (bound.status !== 200) throw new Error(`binding the producer key answered ${bound.status}: ${bound.text.slice(0, 300)}`);
      this.producerKey = { key, signer };
    }
    return this.producerKey;
  }

  private async rest<T>(method: string, path: string, body: unknown, status: number): Promise<Answer<T>> {
    const res = await this.api(path, { method, body, key: await this.retentionKey() });
    if (res.status === status) return { ok: true, value: res.body as T };
    return { ok: false, status: res.status, code: res.body?.code as string | undefined, message: res.text.slice(0, 300) };
  }

  private async dashboard<T>(work: (owner: WebSession) => Promise<T>): Promise<Answer<T>> {
    const outcome = work(await this.session());
    try {
      return { ok: true, value: await outcome };
    } catch {
      // The same rejection, read for its status and code (anything but a tRPC error is thrown on).
      return { ok: false, ...(await failure(outcome)) };
    }
  }

  /** Erases through the dashboard or REST. */
  erase(input: EraseInput, via: RetentionVia): Promise<Answer<{ erased: number; held: number; entries: number[] }>> {
    return via === 'rest' ? this.rest('POST', '/v1/retention/erasures', input, 200) : this.dashboard((owner) => owner.client.dashboard.retention.erase.mutate(input));
  }

  /** Places a hold; answers its id and the holds listed after it. */
  async placeHold(filter: { actor_id?: string }, via: RetentionVia): Promise<Answer<{ id: string; holds: string[] }>> {
    if (via === 'rest') {
      const placed = await this.rest<{ id: string }>('POST', '/v1/retention/holds', { filter, reason: 'model hold' }, 201);
      if (!placed.ok) return placed;
      const listed = await this.rest<{ data: { id: string }[] }>('GET', '/v1/retention/holds', undefined, 200);
      return listed.ok ? { ok: true, value: { id: placed.value.id, holds: listed.value.data.map((h) => h.id) } } : listed;
    }
    const owner = await this.session();
    const before = new Set((await owner.client.dashboard.retention.view.query()).holds.map((h) => h.id));
    return this.dashboard(async (o) => {
      const holds = (await o.client.dashboard.retention.placeHold.mutate({ filter, reason: 'model hold' })).holds.map((h) => h.id);
      return { id: holds.find((id) => !before.has(id)) ?? '', holds };
    });
  }

  /** Releases a hold; answers the holds listed after it. */
  async releaseHold(id: string, via: RetentionVia): Promise<Answer<string[]>> {
    if (via === 'rest') {
      const released = await this.rest<{ id: string; released: boolean }>('DELETE', `/v1/retention/holds/${id}`, undefined, 200);
      if (!released.ok) return released;
      const listed = await this.rest<{ data: { id: string }[] }>('GET', '/v1/retention/holds', undefined, 200);
      return listed.ok ? { ok: true, value: listed.value.data.map((h) => h.id) } : listed;
    }
    return this.dashboard(async (owner) => (await owner.client.dashboard.retention.releaseHold.mutate({ id })).holds.map((h) => h.id));
  }

  setPolicy(days: number | null, via: RetentionVia): Promise<Answer<PolicyView>> {
    return via === 'rest' ? this.rest('PUT', '/v1/retention/policy', { days }, 200) : this.dashboard((owner) => owner.client.dashboard.retention.setPolicy.mutate({ days }));
  }

  /** Closes the primary instance and starts a new one on the same database and clock. */
  async restart(): Promise<void> {
    await this.closeApp(this.app);
    this.app = await startApp(this.dbName, this.clock);
  }

  async startSecond(): Promise<TestApp> {
    this.second ??= await startApp(this.dbName, this.clock);
    return this.second;
  }

  async stopSecond(): Promise<void> {
    const second = this.second;
    this.second = null;
    if (second) await this.closeApp(second);
  }

  /** The raw events collection of the organization (or `tenant`): events and tombstones alike, whatever the service's types say. */
  async slots(tenant: string = this.orgId): Promise<SlotDoc[]> {
    return this.admin.db(this.dbName).collection<SlotDoc>('events').find({ tenant }).toArray();
  }

  /** The raw events collection, as a database writer behind the service's back sees it. */
  eventsCollection() {
    return this.admin.db(this.dbName).collection<SlotDoc>('events');
  }

  /** The ids of the rows the service moved aside into `foreign_rows` (as they were found). */
  async movedAside(): Promise<Set<string>> {
    const docs = await this.admin.db(this.dbName).collection<{ row: { _id?: unknown } }>('foreign_rows').find({}).toArray();
    return new Set(docs.map((doc) => String(doc.row._id)));
  }

  /** The second organization, made (with a key) on first use. */
  async otherOrg(): Promise<OtherOrg> {
    if (!this.other) {
      const org = await this.app.org({ name: 'Other' });
      this.other = { id: org.id, key: org.key };
    }
    return this.other;
  }

  /** The service's own retention entries (prune and erasure), as stored. */
  async retentionEntries(): Promise<{ _id: string; seq: number; action: string; metadata: string }[]> {
    return this.admin.db(this.dbName).collection<{ _id: string; seq: number; action: string; metadata: string }>('events')
      .find({ tenant: this.orgId, api_key_id: 'audit_ledger', action: { $in: ['audit_ledger.retention.pruned', 'audit_ledger.retention.erased'] } })
      .toArray();
  }

  /**
   * Signs a checkpoint over every stored event, on the primary (as the retention test does before an
   * export or a prune); `planted`: ids of rows written behind the service's back, which are not its
   * events (never to be signed), so they do not count toward the newest.
   */
  async integrate(planted: ReadonlySet<string> = new Set(), tenant: string = this.orgId): Promise<number> {
    const newest = Math.max(0, ...(await this.slots(tenant)).filter((doc) => !planted.has(doc._id)).map((doc) => doc.seq));
    await this.app.services.integrator.integrate(tenant, { storedTo: newest });
    return newest;
  }

  cliEnv(): Record<string, string> {
    return { MONGODB_URI: mongoUri(), MONGODB_DB: this.dbName, LEDGER_SIGNING_KEY_FILE: join(this.dir, 'ledger-key'), LEDGER_NAME: TEST_LEDGER_SIGNER.name };
  }

  cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return runCli(args, this.cliEnv());
  }

  /** Creates a webhook stream from sequence number 1 to a receiver of its own that records each arrival. */
  async createStream(): Promise<ApiResponse<any>> {
    let secret = '';
    const arrivals: Arrival[] = [];
    const receiver = new Receiver(({ headers, body }) => {
      try {
        new Webhook(secret).verify(body, headers);
      } catch (error) {
        return `signature: ${String(error)}`;
      }
      arrivals.push({ at: Date.now(), items: JSON.parse(body) as Arrival['items'] });
      return null;
    }, () => secret !== '');
    await receiver.start();
    const created = await this.api('/v1/streams', { body: { name: 'model', destination: { type: 'webhook', url: receiver.url }, start_seq: 1 } });
    if (created.status !== 201) {
      await receiver.stop();
      return created;
    }
    secret = created.body.signing_secret as string;
    this.stream = { id: created.body.id as string, receiver, arrivals };
    return created;
  }

  async dispose(): Promise<void> {
    await this.stream?.receiver.stop();
    await this.stopSecond().catch(() => undefined);
    await this.closeApp(this.app).catch(() => undefined);
    await this.admin.db(this.dbName).dropDatabase().catch(() => undefined);
    await this.admin.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async closeApp(app: TestApp): Promise<void> {
    try {
      await app.close();
    } catch (error) {
      this.notes.push(String(error));
    }
  }
}

function startApp(dbName: string, clock: { now: number }): Promise<TestApp> {
  // The prune job runs only when a command says so; the database outlives the app (sharedDbName).
  return startTestApp({ label: 'model', sharedDbName: dbName, clock: { now: () => new Date(clock.now) }, env: { RETENTION_PRUNE_INTERVAL_MS: '0' } });
}

