/** What the database absorbs, measured with the driver alone: the limit ingest is read against. */
import type { MongoClient } from 'mongodb';
import { v7 as uuidv7 } from 'uuid';
import { collections, ensureIndexes } from '../../src/db/database';
import { SECONDS } from './common';

/** An event document as the service stores one of the benchmark's bodies. */
export function eventDoc(tenant: string, seq: number) {
  const now = new Date();
  return {
    _id: uuidv7(), tenant, seq, month: '2000-01', month_seq: seq, ts: now, received_at: now,
    actor_id: 'user_123', actor_name: 'Jane Admin', actor_email: 'jane@example.com', action: 'user.role_changed',
    resource_type: 'user', resource_id: 'user_456', resource_name: 'John Doe',
    metadata: '{"field":"role","old_value":"member","new_value":"admin","ip":"203.0.113.7"}',
    organization_id: tenant, api_key_id: 'key_bench',
  };
}

/**
 * Raw driver insertMany, one batch in flight, the way the group-commit writer writes, into a
 * collection with the service's indexes (`withIndexes`) or with only the unique sequence index, in
 * turns of a given length (`run`, docs/s over all turns so far): measured in turns between the
 * service's own loads, it meets the same drift of a shared machine.
 */
export async function rawInserter(client: MongoClient, dbName: string, batch: number, withIndexes: boolean) {
  const db = client.db(`${dbName}_raw${withIndexes ? 'idx' : ''}`);
  const events = db.collection<ReturnType<typeof eventDoc>>('events');
  if (withIndexes) await ensureIndexes(collections(db));
  else await events.createIndexes([{ key: { tenant: 1, seq: 1 }, name: 'tenant_seq', unique: true }]);
  let seq = 0;
  let ms = 0;
  return {
    async run(seconds: number): Promise<void> {
      const started = Date.now();
      const until = started + seconds * 1000;
      while (Date.now() < until) {
        const docs = Array.from({ length: batch }, () => eventDoc('raw', ++seq));
        await events.insertMany(docs, { ordered: true, writeConcern: { w: 'majority', j: true } });
      }
      ms += Date.now() - started;
    },
    perSecond: (): number => seq / Math.max(1e-9, ms / 1000),
    close: () => db.dropDatabase(),
  };
}

/** The same for SECONDS at once; docs/s. */
export async function rawInsert(client: MongoClient, dbName: string, batch: number, withIndexes: boolean): Promise<number> {
  const inserter = await rawInserter(client, dbName, batch, withIndexes);
  await inserter.run(SECONDS);
  await inserter.close();
  return inserter.perSecond();
}
