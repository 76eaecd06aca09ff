/**
 * Starts the real application on port 0 against the test database server, in a database of its own,
 * and offers factories for organizations and keys. Tests talk to it over real HTTP.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CommandStartedEvent, MongoClient } from 'mongodb';
import { type Config, type Limits, loadConfig } from '../../src/config/env';
import type { Policy } from '../../src/domain/ledger/witnessFormats';
import { collections, type Collections } from '../../src/db/database';
import { signerFromSeed } from '../../src/domain/ledger/note';
import type { Plan } from '../../src/domain/plan';
import { clientOptions } from '../../src/db/connect';
import { queryShapeProblem, queryShapesOf } from './queryShapes';
import type { Clock } from '../../src/domain/time';
import { createHttpApp, type HttpApp, type HttpOptions, SERVER_TIMEOUTS } from '../../src/http/app';
import { createLogger } from '../../src/logger';
import type { ThrottlePolicy } from '../../src/services/authThrottle';
import { createServices, type Parts } from '../../src/services/container';
import type { Lifecycle } from '../../src/services/jobs';

/** Every test app signs with this key (name `ledger.test`), as instances of one installation share theirs. */
export const TEST_LEDGER_SEED = createHash('sha256').update('audit ledger test key').digest();
export const TEST_LEDGER_SIGNER = signerFromSeed('ledger.test', TEST_LEDGER_SEED);


export interface TestOrg {
  id: string;
  key: string;
  keyId: string;
}

export interface TestApp {
  url: string;
  dbName: string;
  /** Every part of the service (white-box). */
  services: Parts;
  /** Its background jobs, started (`jobs.get(name)` stops or starts one alone). */
  jobs: Lifecycle;
  http: HttpApp;
  /** The database's collections, for a test to look at or change behind the service's back. */
  collections: Collections;
  /** The app's own driver client, with command monitoring on (`commandStarted` events). */
  client: MongoClient;
  /**
   * The database commands sent on behalf of requests that carried `MARKER_HEADER: marker` (or of work run
   * by `marked(marker, …)`), in order: what those requests cost, whatever the background jobs did meanwhile.
   */
  commandsOf(marker: string): CommandStartedEvent[];
  /** Runs `work` as a request with `MARKER_HEADER: marker` would run: its commands are `commandsOf(marker)`. */
  marked<T>(marker: string, work: () => Promise<T>): Promise<T>;
  /** A new organization with one active key. */
  org(options?: { plan?: Plan; monthlyCap?: number | null; name?: string }): Promise<TestOrg>;
  /** Another key for an existing organization. */
  key(orgId: string): Promise<{ key: string; keyId: string }>;
  close(): Promise<void>;
}

export function mongoUri(): string {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('MONGODB_URI is not set: the jest global set-up should have set it');
  return uri;
}

/** A database name no other suite uses. */
export function uniqueDbName(label: string): string {
  return `t_${label.replace(/[^a-z0-9]/gi, '').slice(0, 20)}_${randomBytes(4).toString('hex')}`;
}

/**
 * The header that marks a test's request: the app handles it inside an async context carrying the
 * header's value, and the driver emits `commandStarted` in the async context of the operation's caller,
 * so a command can be told to be the request's own (TestApp.commandsOf).
 */
export const MARKER_HEADER = 'x-test-marker';
const requestMarker = new AsyncLocalStorage<string>();

/** `listener`, handling each request with a MARKER_HEADER inside that marker's async context. */
function markingRequests(listener: RequestListener): RequestListener {
  return (req, res) => {
    const marker = req.headers[MARKER_HEADER];
    if (typeof marker === 'string') requestMarker.run(marker, () => listener(req, res));
    else listener(req, res);
  };
}

/** Serves `listener` on a free loopback port. */
export async function listenOnFreePort(listener: RequestListener): Promise<{ server: Server; url: string }> {
  const server = createServer(SERVER_TIMEOUTS, listener);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export async function startTestApp(options: {
  label: string;
  clock?: Clock;
  planCaps?: Config['planCaps'];
  /** Receives the app's log lines (at info level) instead of discarding them. */
  logTo?: { write(line: string): void };
  throttle?: ThrottlePolicy;
  http?: HttpOptions;
  /** Limits other than the defaults (a test of one limit lowers just that one). */
  limits?: Partial<Limits>;
  /** Another database server than the suite's (the outage test runs one of its own). */
  uri?: string;
  /** How long an operation waits for an unreachable database (default: the service's 5 s). */
  dbTimeoutMs?: number;
  /** Another app's database: a second, independent service on the same data (it does not drop it). */
  sharedDbName?: string;
  /** The ledger's checkpoint interval (default here 200 ms, to keep waits short). */
  ledgerIntervalMs?: number;
  /** The ledger's budget of logs per round (LedgerOptions.logsPerRound). */
  ledgerLogsPerRound?: number;
  /** Settings as environment variables, over the test defaults (streams may reach loopback, and scan often). */
  env?: Record<string, string>;
  /** Whether this app delivers log streams (default yes; no where server processes on its database do). */
  deliverStreams?: boolean;
  /** The installation log's witnesses (LEDGER_WITNESS_POLICY, parsed). */
  witnessPolicy?: Policy;
}): Promise<TestApp> {
  const client = new MongoClient(options.uri ?? mongoUri(), { ...clientOptions(options.dbTimeoutMs ?? 5000), monitorCommands: true });
  // Every query the app sends, checked against the declared indexes when the suite closes it.
  const queryProblems = new Set<string>();
  client.on('commandStarted', (event) => {
    for (const shape of queryShapesOf(event)) {
      const problem = queryShapeProblem(shape);
      if (problem) queryProblems.add(problem);
    }
  });
  // Commands of marked requests, by marker (only marked ones are kept).
  const markedCommands = new Map<string, CommandStartedEvent[]>();
  client.on('commandStarted', (event) => {
    const marker = requestMarker.getStore();
    if (marker === undefined) return;
    const commands = markedCommands.get(marker) ?? [];
    commands.push(event);
    markedCommands.set(marker, commands);
  });
  await client.connect();
  const dbName = options.sharedDbName ?? uniqueDbName(options.label);
  const db = client.db(dbName);
  const log = options.logTo ? createLogger('info', options.logTo) : createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  const clock = options.clock ?? { now: () => new Date() };
  // Every default from loadConfig, as a deployment without variables gets them; a test changes only what it names.
  const config = loadConfig({ STREAM_ALLOW_PRIVATE_DESTINATIONS: 'true', STREAM_SCAN_INTERVAL_MS: '200', STREAM_POLL_MS: '100', ...options.env });
  const limits: Limits = { ...config.limits, ...options.limits };
  const ledger = { name: 'ledger.test', signer: TEST_LEDGER_SIGNER, intervalMs: options.ledgerIntervalMs ?? 200, logsPerRound: options.ledgerLogsPerRound, witnessPolicy: options.witnessPolicy ?? null };
  const container = await createServices(db, { ...config, planCaps: options.planCaps ?? config.planCaps, limits, ledger }, clock, log, { throttle: options.throttle });
  const services = container.parts;
  // As main.ts runs them, but for the periodic audit and pruning, which tests run when they want them.
  const jobs = container.jobs({ selfAuditIntervalMs: 200, ledgerAuditIntervalMs: 0, pruneIntervalMs: 0, deliverStreams: options.deliverStreams !== false });
  await jobs.start();
  const http = createHttpApp(container.http, options.http);
  const { server, url } = await listenOnFreePort(markingRequests(http.listener));

  const key: TestApp['key'] = async (orgId) => {
    const created = await services.stores.apiKeys.forOrg(orgId).create('test key', clock.now());
    return { key: created.key, keyId: created.doc.key_id };
  };

  return {
    url,
    dbName,
    collections: collections(db),
    services,
    jobs,
    http,
    client,
    commandsOf: (marker) => [...(markedCommands.get(marker) ?? [])],
    marked: (marker, work) => requestMarker.run(marker, work),
    async org(o = {}) {
      const org = await services.stores.orgs.create({ name: o.name ?? 'Test Org', plan: o.plan ?? 'free', monthlyCap: o.monthlyCap ?? null }, clock.now());
      const k = await key(org._id);
      return { id: org._id, key: k.key, keyId: k.keyId };
    },
    key,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => { resolve(); }));
      await jobs.stop();
      if (!options.sharedDbName) await db.dropDatabase().catch(() => undefined);
      await client.close();
      if (queryProblems.size) throw new Error(`queries no declared index serves:\n${[...queryProblems].join('\n')}`);
    },
  };
}
