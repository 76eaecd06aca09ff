/**
 * `npm run bench:retention`: what pruning keeps and what it costs (issue 25), in one process with a
 * clock the script moves.
 *
 * BENCH_RETENTION_EVENTS events (default 100,000; the benchmark's usual bodies, 100 actors) are written
 * through the service (batches of 1,000) and signed; a 30-day policy is set and the clock moved 40 days;
 * the prune job then removes them all. Reported:
 * - storage per event before and after: the event document (BSON, as stored), its share of the tiles
 *   (kept either way), and the leaf kept for it after (its document); and what the database says of
 *   the collections (collStats), where it says it;
 * - the prune's speed, as a ratio to a baseline in the same run: reading the same events with a raw
 *   driver cursor (the least any prune must do), and to deleting them with raw `deleteMany`s (on a
 *   copy, in runs of 10,000), and as events per second.
 *
 * Recorded in BENCHMARKS.md. Needs MONGODB_URI (FerretDB here: `npm run db:ferretdb` prints one).
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BSON, type Db, MongoClient } from 'mongodb';
import { loadConfig } from '../src/config/env';
import { createHttpApp } from '../src/http/app';
import { createLogger } from '../src/logger';
import { createServices } from '../src/services/container';
import { DAY_MS } from '../src/domain/retention';
import { signerFromSeed } from '../src/domain/ledger/note';
import type { SessionPrincipal } from '../src/services/auth';
import { BENCH_PLAN_CAPS, recordBenchmark, runHeading } from './bench/common';

const EVENTS = Number(process.env.BENCH_RETENTION_EVENTS ?? 100_000);
const BATCH = 1000;

const perEvent = (bytes: number) => `${(bytes / EVENTS).toFixed(0)} B`;

async function collStats(db: Db, name: string): Promise<{ size: number; storage: number; indexes: number } | null> {
  try {
    const stats = (await db.command({ collStats: name })) as { size?: number; storageSize?: number; totalIndexSize?: number };
    return { size: stats.size ?? 0, storage: stats.storageSize ?? 0, indexes: stats.totalIndexSize ?? 0 };
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('MONGODB_URI is required (npm run db:ferretdb prints one for FerretDB)');
  const heading = await runHeading(uri, 'retention, `npm run bench:retention`');
  const dbName = `bench_retention_${Date.now()}`;
  const client = await MongoClient.connect(uri);
  const db = client.db(dbName);
  let now = Date.now();
  const clock = { now: () => new Date(now) };
  const config = loadConfig({ RETENTION_PRUNE_INTERVAL_MS: '0' });
  const signer = signerFromSeed('bench.retention', Buffer.alloc(32, 7));
  const container = await createServices(db, { ...config, planCaps: BENCH_PLAN_CAPS, ledger: { name: 'bench.retention', signer, intervalMs: 500 } }, clock, createLogger('silent'));
  const services = container.parts;
  const jobs = container.jobs({ selfAuditIntervalMs: 0, ledgerAuditIntervalMs: 0, pruneIntervalMs: 0, deliverStreams: false });
  await jobs.start();
  const http = createHttpApp(container.http, {});
  const server = createServer(http.listener).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const lines: string[] = [];
  try {
    const org = await services.stores.orgs.create({ name: 'Bench', plan: 'enterprise', monthlyCap: null }, clock.now());
    const { key } = await services.stores.apiKeys.forOrg(org._id).create('bench', clock.now());
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const seedStart = Date.now();
    for (let done = 0; done < EVENTS; done += BATCH) {
      const events = Array.from({ length: Math.min(BATCH, EVENTS - done) }, (_, i) => ({
        actor: { id: `user_${(done + i) % 100}`, name: `User ${(done + i) % 100}`, email: `user${(done + i) % 100}@example.com` },
        action: 'invoice.updated',
        resource: { type: 'invoice', id: `inv_${done + i}`, name: `Invoice ${done + i}` },
        metadata: { field: 'amount', old_value: done + i, new_value: done + i + 1, ip: '203.0.113.7' },
      }));
      const res = await fetch(`${url}/v1/events/batch`, { method: 'POST', headers, body: JSON.stringify({ events }) });
      if (res.status !== 201) throw new Error(`batch: ${res.status} ${await res.text()}`);
    }
    await services.integrator.integrate(org._id, { storedTo: EVENTS });
    lines.push(`- ${EVENTS.toLocaleString('en-US')} events written (batches of ${BATCH}) and signed in ${((Date.now() - seedStart) / 1000).toFixed(1)} s.`);

    // Storage before: what one event costs, as BSON, and what the tiles add per event (kept either way).
    const sample = await db.collection('events').find({ tenant: org._id }).limit(1000).toArray();
    const eventBytes = sample.reduce((n, doc) => n + BSON.calculateObjectSize(doc), 0) / sample.length;
    let tileBytes = 0;
    for await (const tile of db.collection('ledger_tiles').find({ tenant: org._id })) tileBytes += BSON.calculateObjectSize(tile);
    const eventsBefore = await collStats(db, 'events');

    // The baselines: the same events read with a raw cursor, and deleted with raw deleteMany calls (a copy).
    const readStart = process.hrtime.bigint();
    let read = 0;
    for await (const _doc of db.collection('events').find({ tenant: org._id }).batchSize(1000)) read++;
    if (read < EVENTS) throw new Error(`read ${read} of ${EVENTS} events`);
    const readMs = Number(process.hrtime.bigint() - readStart) / 1e6;
    const copy = db.collection('events_copy');
    for (let at = 0; at < EVENTS; at += 10_000) await copy.insertMany(await db.collection('events').find({ tenant: org._id }).skip(at).limit(10_000).toArray());
    const deleteStart = process.hrtime.bigint();
    // In runs of 10,000 (as the prune deletes): FerretDB cannot delete 100,000 documents in one statement.
    for (let seq = 0; seq < EVENTS; seq += 10_000) await copy.deleteMany({ tenant: org._id, seq: { $gt: seq, $lte: seq + 10_000 } });
    const deleteMs = Number(process.hrtime.bigint() - deleteStart) / 1e6;
    await copy.drop();

    const owner: SessionPrincipal = { kind: 'session', tenant: org._id, accountId: 'acct_bench', email: 'owner@bench.example', role: 'owner', sessionHash: '' };
    await services.retention.setPolicy(owner, 30);
    now += 40 * DAY_MS;
    const pruneStart = process.hrtime.bigint();
    const pruned = await services.retention.prune(org._id);
    const pruneMs = Number(process.hrtime.bigint() - pruneStart) / 1e6;
    if (pruned.pruned < EVENTS) throw new Error(`pruned ${pruned.pruned} of ${EVENTS}`);

    const kept = await db.collection('events').find({ tenant: org._id, removed: { $exists: true } }).limit(1000).toArray();
    const leafBytes = kept.reduce((n, doc) => n + BSON.calculateObjectSize(doc), 0) / kept.length;
    const eventsAfter = await collStats(db, 'events');
    const remaining = await db.collection('events').countDocuments({ tenant: org._id, removed: { $exists: false } });

    lines.push(
      `- storage per event, as BSON: **${eventBytes.toFixed(0)} B** for the event document before (the bench's bodies: actor with name and email, resource with name, 4 metadata keys, salt), ` +
        `**${leafBytes.toFixed(0)} B** for its tombstone after (id, number, month, leaf, removal); the tiles, kept either way, ${perEvent(tileBytes)} per event. ` +
        `Before ${(eventBytes + tileBytes / EVENTS).toFixed(0)} B, after ${(leafBytes + tileBytes / EVENTS).toFixed(0)} B (${(((leafBytes + tileBytes / EVENTS) / (eventBytes + tileBytes / EVENTS)) * 100).toFixed(0)}%).`,
    );
    if (eventsBefore && eventsAfter) {
      lines.push(
        `- the database's collStats: events ${perEvent(eventsBefore.size)} of data and ${perEvent(eventsBefore.indexes)} of indexes per event before; after, ` +
          `${(eventsAfter.size / 2 ** 20).toFixed(1)} MiB for the ${remaining} events left (retention entries) and the tombstones (FerretDB does not shrink a table's size before PostgreSQL's VACUUM).`,
      );
    }
    lines.push(
      `- the prune of ${pruned.pruned.toLocaleString('en-US')} events (${pruned.entries.length} prune entries of at most 5,000 events each, each event replaced by its tombstone): ${(pruneMs / 1000).toFixed(1)} s = **${Math.round(pruned.pruned / (pruneMs / 1000)).toLocaleString('en-US')} events/s**; ` +
        `**${(pruneMs / readMs).toFixed(1)}×** the time to read the same events with a raw cursor (${(readMs / 1000).toFixed(1)} s), ${(pruneMs / deleteMs).toFixed(1)}× raw \`deleteMany\`s of them (runs of 10,000) (${(deleteMs / 1000).toFixed(1)} s).`,
    );
    for (const line of lines) console.log(line);
    recordBenchmark([heading, '', `Pruning ${EVENTS.toLocaleString('en-US')} events of one organization, in one process (the service's own code, a clock moved 40 days past a 30-day policy):`, '', ...lines, '']);
  } finally {
    server.closeAllConnections();
    server.close();
    await jobs.stop();
    await db.dropDatabase();
    await client.close();
  }
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
