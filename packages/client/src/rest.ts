/**
 * The REST API under `/v1` over `fetch` (Node 20 and browsers alike): one method per route, errors as
 * `AuditLedgerError` (the API's code and fields) or `NetworkError` (no answer). Each call is one request:
 * retries are the delivery queue's business (queue.ts), which knows when a retry is safe.
 */
import { AuditLedgerError, type ErrorBody, NetworkError } from './errors.ts';
import type { operations } from './openapi.ts';
import type { ProducerSigner } from './producer.ts';
import type { Checkpoint, ConsistencyProof, EventFilters, EventInput, EventPage, InclusionProof, ProofsSidecar, Recorded, StoredEvent } from './types.ts';
import { ReceiptVerifier, type VerifiedReceipts, type VerifyOptions } from './verify.ts';

export interface ClientOptions {
  /** The service's base address, without `/v1` (`https://audit.example.com`). */
  url: string;
  apiKey: string;
  /** Another `fetch` (a proxy's, a test's); the global one by default. */
  fetch?: typeof fetch;
  /** How long a call may take, answer body included, before it counts as a network error (default 30 s). */
  timeoutMs?: number;
  /** What `verifyReceipts()` checks against: the pinned verifier key, a witness policy, where to keep what it saw. */
  verify?: VerifyOptions;
  /**
   * For an API key bound to a producer key (`producerSigner()`): every event sent (`createEvent`,
   * `createBatch`, the delivery queue) is signed with it first, and `verifyReceipts()` checks each
   * recorded event's signature by its producer key.
   */
  producer?: ProducerSigner;
}

export interface WriteOptions {
  /** Sent as `Idempotency-Key`: a retry with the same key and body stores nothing twice (docs/api.md, 17). */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** What an operation answers on success (openapi.json's 200 or 201 body). */
type Answer<Id extends keyof operations> = operations[Id]['responses'] extends infer R
  ? R extends { 200: { content: { 'application/json': infer A } } } ? A : R extends { 201: { content: { 'application/json': infer A } } } ? A : never
  : never;
/** What an operation takes as its JSON body. */
type BodyOf<Id extends keyof operations> = operations[Id]['requestBody'] extends { content: { 'application/json': infer B } } | undefined ? B : never;

function retryAfterMsOf(headers: Headers): number | null {
  const value = headers.get('retry-after');
  if (value === null) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

async function errorOf(response: Response): Promise<AuditLedgerError> {
  let body: Partial<ErrorBody> | null = null;
  try {
    body = (await response.json()) as Partial<ErrorBody>;
  } catch {
    // not JSON (a proxy's page): the status says enough
  }
  return new AuditLedgerError(response.status, body, retryAfterMsOf(response.headers));
}

/** A request's parts besides its method and path. `query`: the filters' values, strings or numbers; undefined ones are left out. */
interface RequestOptions extends WriteOptions {
  query?: object;
  body?: unknown;
}

export class AuditLedgerClient {
  private readonly base: string;
  private readonly apiKey: string;
  private readonly fetch: typeof fetch;
  private readonly timeoutMs: number;
  private readonly verifier: ReceiptVerifier | null;
  /** The signer of every event sent, when the API key is bound to a producer key. */
  readonly producer: ProducerSigner | null;

  constructor(options: ClientOptions) {
    this.base = options.url.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.timeoutMs = Number.isFinite(options.timeoutMs) && (options.timeoutMs ?? 0) > 0 ? (options.timeoutMs as number) : 30_000;
    this.producer = options.producer ?? null;
    const producerKey = options.verify?.producerKey ?? this.producer?.producerKey;
    this.verifier = options.verify ? new ReceiptVerifier(this, { ...options.verify, ...(producerKey === undefined ? {} : { producerKey }) }) : null;
  }

  /**
   * `POST /v1/events`: one event, with its receipt. With a producer the event is signed first, its
   * timestamp fixed (now, if it gives none): to retry with the same Idempotency-Key, sign it once
   * (`producer.sign(event)`) and send that body each time (an event that carries a signature goes as it is).
   */
  async createEvent(event: EventInput, options: WriteOptions = {}): Promise<Recorded & { replayed: boolean }> {
    retryable(this.producer, [event], options);
    const signed = this.producer ? await this.producer.sign(event) : event;
    const { body, headers } = await this.send('POST', '/v1/events', { body: signed, ...options });
    const { event: stored, ledger } = body as { event: Recorded['event']; ledger: Recorded['receipt'] };
    return { event: stored, receipt: ledger, replayed: headers.get('idempotent-replayed') === 'true' };
  }

  /** `POST /v1/events/batch`: all or none, answered in order; with a producer, each event signed first (as `createEvent`). */
  async createBatch(events: readonly EventInput[], options: WriteOptions = {}): Promise<{ recorded: Recorded[]; replayed: boolean }> {
    const producer = this.producer;
    retryable(producer, events, options);
    const signed = producer ? await Promise.all(events.map((event) => producer.sign(event))) : events;
    const { body, headers } = await this.send('POST', '/v1/events/batch', { body: { events: signed }, ...options });
    const answer = body as { events: Recorded['event'][]; ledger: Recorded['receipt'][] };
    const recorded = answer.events.map((event, i) => ({ event, receipt: answer.ledger[i] as Recorded['receipt'] }));
    return { recorded, replayed: headers.get('idempotent-replayed') === 'true' };
  }

  /**
   * `PUT /v1/producer-key`: binds this API key to a producer key (the client's own producer's, by
   * default), before the key's first event; from then on the service refuses any event of the key that
   * its producer did not sign. The same binding again answers the same; 409 `PRODUCER_KEY_CONFLICT` once
   * the key has sent an event or has another producer key.
   */
  async bindProducerKey(producerKey: string | undefined = this.producer?.producerKey): Promise<Answer<'events-bindProducerKey'>> {
    if (producerKey === undefined) throw new TypeError('bindProducerKey needs a producer key, or the client\'s `producer` option');
    const body: BodyOf<'events-bindProducerKey'> = { producer_key: producerKey };
    return (await this.send('PUT', '/v1/producer-key', { body })).body as Answer<'events-bindProducerKey'>;
  }

  /** `GET /v1/events/:id`. */
  async getEvent(id: string): Promise<StoredEvent> {
    return (await this.send('GET', `/v1/events/${encodeURIComponent(id)}`)).body as StoredEvent;
  }

  /** One page of `GET /v1/events`. */
  async listPage(filters: EventFilters & { limit?: number; cursor?: string } = {}): Promise<EventPage> {
    return (await this.send('GET', '/v1/events', { query: filters })).body as EventPage;
  }

  /** Every event matching `filters`, newest first, page after page as the iteration asks for them. */
  async *listEvents(filters: EventFilters & { limit?: number } = {}): AsyncGenerator<StoredEvent, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.listPage({ ...filters, ...(cursor === undefined ? {} : { cursor }) });
      yield* page.data;
      cursor = page.has_more && page.next_cursor !== null ? page.next_cursor : undefined;
    } while (cursor !== undefined);
  }

  /**
   * `GET /v1/events/export`, streamed: the body as the service sends it (a JSON array or CSV), never held
   * whole. `treeSize` pins it to one signed tree (docs/ledger.md); the response names it in `treeSize`.
   */
  async exportEvents(filters: EventFilters & { format?: 'json' | 'csv'; tree_size?: number } = {}): Promise<{ body: ReadableStream<Uint8Array>; treeSize: number | null }> {
    const response = await this.request('GET', '/v1/events/export', { query: filters });
    if (!response.body) throw new NetworkError('the export answered no body');
    const size = response.headers.get('ledger-tree-size');
    return { body: response.body, treeSize: size === null ? null : Number(size) };
  }

  /** `GET /v1/ledger/key`: the key name and verifier key of the service's signed notes (pin it out of band too). */
  async ledgerKey(): Promise<Answer<'ledger-key'>> {
    return (await this.send('GET', '/v1/ledger/key')).body as Answer<'ledger-key'>;
  }

  /** `GET /v1/ledger/checkpoint`: the organization's newest signed checkpoint, with its inclusion in the installation log. */
  async checkpoint(installationSize?: number): Promise<Checkpoint> {
    return (await this.send('GET', '/v1/ledger/checkpoint', { query: { installation_size: installationSize } })).body as Checkpoint;
  }

  /** `GET /v1/ledger/consistency`: that the tree of `from` events is a prefix of the one of `to` (default: the newest). */
  async consistency(from: number, to?: number): Promise<ConsistencyProof> {
    return (await this.send('GET', '/v1/ledger/consistency', { query: { from, to } })).body as ConsistencyProof;
  }

  /** `GET /v1/events/:id/proof`: the event's inclusion proof under a signed checkpoint. */
  async proof(id: string, treeSize?: number): Promise<InclusionProof> {
    return (await this.send('GET', `/v1/events/${encodeURIComponent(id)}/proof`, { query: { tree_size: treeSize } })).body as InclusionProof;
  }

  /**
   * Proves the receipts of recorded events (verify.ts): each event included under a checkpoint signed by
   * the pinned key, consistent with every checkpoint verified before, witnessed when a policy is given.
   * Throws VerificationError, with what failed, when the service's answers do not prove them.
   */
  async verifyReceipts(receipts: readonly Recorded[]): Promise<VerifiedReceipts> {
    if (!this.verifier) throw new TypeError('verifyReceipts needs the client\'s `verify` option: the verifier key to check against');
    return this.verifier.verify(receipts);
  }

  /** `GET /v1/ledger/proofs`: the inclusion path of every event the export with these filters returns, under one checkpoint. */
  async proofs(query: EventFilters & { tree_size?: number } = {}): Promise<ProofsSidecar> {
    return (await this.send('GET', '/v1/ledger/proofs', { query })).body as ProofsSidecar;
  }

  /** The log streams (docs/streams.md): create, read, pause, resume, test, retry, delete. */
  readonly streams = {
    create: async (stream: BodyOf<'streams-create'>) => (await this.send('POST', '/v1/streams', { body: stream })).body as Answer<'streams-create'>,
    list: async () => (await this.send('GET', '/v1/streams')).body as Answer<'streams-list'>,
    get: async (id: string) => (await this.send('GET', `/v1/streams/${encodeURIComponent(id)}`)).body as Answer<'streams-get'>,
    pause: async (id: string) => (await this.send('POST', `/v1/streams/${encodeURIComponent(id)}/pause`)).body as Answer<'streams-pause'>,
    resume: async (id: string) => (await this.send('POST', `/v1/streams/${encodeURIComponent(id)}/resume`)).body as Answer<'streams-resume'>,
    test: async (id: string) => (await this.send('POST', `/v1/streams/${encodeURIComponent(id)}/test`)).body as Answer<'streams-test'>,
    retry: async (id: string) => (await this.send('POST', `/v1/streams/${encodeURIComponent(id)}/retry`)).body as Answer<'streams-retry'>,
    delete: async (id: string) => (await this.send('DELETE', `/v1/streams/${encodeURIComponent(id)}`)).body as Answer<'streams-delete'>,
  };

  /** `POST /v1/viewer-tokens`: a short-lived token for an end user's view of one organization's trail. */
  async createViewerToken(token: BodyOf<'viewerTokens-create'>): Promise<Answer<'viewerTokens-create'>> {
    return (await this.send('POST', '/v1/viewer-tokens', { body: token })).body as Answer<'viewerTokens-create'>;
  }

  /** Retention (docs/retention.md): the policy, legal holds and erasures. */
  readonly retention = {
    get: async () => (await this.send('GET', '/v1/retention')).body as Answer<'retention-get'>,
    setPolicy: async (policy: BodyOf<'retention-setPolicy'>) => (await this.send('PUT', '/v1/retention/policy', { body: policy })).body as Answer<'retention-setPolicy'>,
    listHolds: async () => (await this.send('GET', '/v1/retention/holds')).body as Answer<'retention-holds-list'>,
    placeHold: async (hold: BodyOf<'retention-holds-place'>) => (await this.send('POST', '/v1/retention/holds', { body: hold })).body as Answer<'retention-holds-place'>,
    releaseHold: async (id: string) => (await this.send('DELETE', `/v1/retention/holds/${encodeURIComponent(id)}`)).body as Answer<'retention-holds-release'>,
    erase: async (erasure: BodyOf<'retention-erase'>) => (await this.send('POST', '/v1/retention/erasures', { body: erasure })).body as Answer<'retention-erase'>,
  };

  /** One call answered with JSON: the body as the service sent it (its type is the route's, said by each caller). */
  private async send(method: string, path: string, options: RequestOptions = {}): Promise<{ body: unknown; headers: Headers }> {
    const response = await this.request(method, path, options);
    try {
      return { body: await response.json(), headers: response.headers };
    } catch (error) {
      // The answer was cut (or garbled) after its status: the request may have been stored. A network error, retried.
      throw new NetworkError(`${method} ${path}: the answer could not be read: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }

  private async request(method: string, path: string, options: RequestOptions): Promise<Response> {
    const url = new URL(this.base + path);
    for (const [name, value] of Object.entries(options.query ?? {}) as [string, string | number | undefined][]) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}` };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    // Serialized before the try: a body that cannot be JSON is the caller's error, not the network's.
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const timeout = AbortSignal.timeout(this.timeoutMs);
    let response: Response;
    try {
      response = await this.fetch(url, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
      });
    } catch (error) {
      throw new NetworkError(`${method} ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    if (!response.ok) throw await errorOf(response);
    return response;
  }
}

/**
 * Refuses what a signing client would send differently at each retry under one Idempotency-Key (the
 * service would answer 422 IDEMPOTENCY_KEY_REUSED): an event that gives no timestamp is signed with the
 * time of each call. Give the timestamp, or sign it once (`producer.sign`) and send that.
 */
function retryable(producer: ProducerSigner | null, events: readonly EventInput[], options: WriteOptions): void {
  if (!producer || options.idempotencyKey === undefined) return;
  if (events.some((event) => event.timestamp == null && (event as { producer_signature?: unknown }).producer_signature == null)) {
    throw new TypeError('With a producer and an Idempotency-Key, give each event its timestamp (or send producer.sign(event)): an event without one is signed with the time of each call, so a retry would not be the same request');
  }
}
