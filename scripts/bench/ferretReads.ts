/**
 * FerretDB read latency as an organization grows: GET /v1/events/:id, the first list page filtered by
 * actor, and the first unfiltered list page, at 10,000 and 100,000 events in one organization, each with
 * the PostgreSQL GIN indexes that scripts/ferretdb.sh adds (scripts/ferretdb-indexes.sql) and again with
 * them dropped, on the same data in the same run. Only on FerretDB; needs psql. Not a test.
 */
import { execFileSync } from 'node:child_process';
import type { MongoClient } from 'mongodb';
import { v7 as uuidv7 } from 'uuid';
import { createLogger } from '../../src/logger';
import { createServices } from '../../src/services/container';
import { serviceEnv, startProcess, stop } from './common';
import { loadConfig } from '../../src/config/env';
import { collections } from '../../src/db/database';

export interface ReadFigures {
  events: number;
  /** Median milliseconds, with the GIN indexes and without them. */
  byId: [number, number];
  listByActor: [number, number];
  listAll: [number, number];
}

const PG_URL = process.env.FERRETDB_PG_URL ?? 'postgres://root@127.0.0.1:5432/ferretdb';
const ACTORS = 100;

function psql(sql: string): string {
  return execFileSync('psql', [PG_URL, '-tAc', sql], { encoding: 'utf8' });
}

async function median(times: number, request: () => Promise<void>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await request();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  return Math.round(ms[Math.floor(ms.length / 2)] ?? 0);
}

async function measureAt(client: MongoClient, uri: string, dbName: string, size: number): Promise<ReadFigures> {
  const services = (await createServices(client.db(dbName), { ...loadConfig({}), planCaps: { free: 1, pro: 1, enterprise: 1 } }, { now: () => new Date() }, createLogger('silent'))).parts;
  const org = await services.stores.orgs.create({ name: 'Reads', plan: 'enterprise', monthlyCap: 1_000_000_000 }, new Date());
  const { key } = await services.stores.apiKeys.forOrg(org._id).create('bench', new Date());
  const ids: string[] = [];
  const started = Date.now() - size;
  for (let seq = 1; seq <= size; ) {
    const docs = [];
    for (let i = 0; i < 1000 && seq <= size; i++, seq++) {
      const at = new Date(started + seq);
      const _id = uuidv7();
      if (seq % 97 === 0) ids.push(_id);
      docs.push({
        _id, tenant: org._id, seq, month: '2000-01', month_seq: seq, ts: at, received_at: at,
        actor_id: `user_${seq % ACTORS}`, actor_name: null, actor_email: null, action: 'user.login',
        resource_type: 'user', resource_id: `user_${seq % ACTORS}`, resource_name: null, metadata: '{}',
        organization_id: org._id, api_key_id: 'key_bench',
      });
    }
    await collections(services.db).events.insertMany(docs, { ordered: true });
  }
  const service = await startProcess('src/main.ts', serviceEnv(uri, dbName));
  const headers = { authorization: `Bearer ${key}` };
  const get = async (path: string) => {
    const res = await fetch(`${service.url}${path}`, { headers });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
  };
  let n = 0;
  // The unfiltered page is read once per variant: on FerretDB it loads and sorts every event of the
  // organization in Go (about 0.1 ms each), whatever the indexes.
  const round = async (all: boolean) => ({
    byId: await median(21, () => get(`/v1/events/${ids[n++ % ids.length] ?? ''}`)),
    listByActor: await median(5, () => get(`/v1/events?limit=50&actor_id=user_${n++ % ACTORS}`)),
    listAll: all ? await median(1, () => get('/v1/events?limit=50')) : 0,
  });
  await round(false); // warm-up: compiled code and PostgreSQL's caches, for both variants alike
  const withGin = await round(true);
  const gin = psql(`select string_agg(format('%I.%I', schemaname, indexname), ',') from pg_indexes where schemaname = '${dbName}' and indexname like '%\\_gin%'`).trim();
  if (gin) psql(`drop index ${gin}`);
  const without = await round(true);
  await stop(service);
  await client.db(dbName).dropDatabase();
  return {
    events: size,
    byId: [withGin.byId, without.byId],
    listByActor: [withGin.listByActor, without.listByActor],
    listAll: [withGin.listAll, without.listAll],
  };
}

/** The figures at 10k and 100k events, or null when the database is not FerretDB or psql is missing. */
export async function measureFerretReads(client: MongoClient, uri: string, dbName: string, isFerret: boolean): Promise<ReadFigures[] | null> {
  if (!isFerret) return null;
  try {
    psql('select 1');
  } catch {
    console.log('FerretDB read figures skipped: psql cannot reach FERRETDB_PG_URL');
    return null;
  }
  const figures: ReadFigures[] = [];
  for (const size of [10_000, 100_000]) {
    const f = await measureAt(client, uri, `${dbName}_reads${size / 1000}k`, size);
    console.log(`FerretDB reads at ${size} events: by id ${f.byId[0]} ms (${f.byId[1]} ms without GIN); list by actor ${f.listByActor[0]} ms (${f.listByActor[1]}); list all ${f.listAll[0]} ms (${f.listAll[1]})`);
    figures.push(f);
  }
  return figures;
}
