import { MongoClient } from 'mongodb';
import { createServices } from '../src/services/container';
import { createLogger } from '../src/logger';
import { BODIES, load } from './bench/common';
import { startServerProcess } from '../test/helpers/processes';
import { createHash } from 'node:crypto';
async function main() {
  const uri = process.env.MONGODB_URI!;
  const N = Number(process.env.PROCS ?? 4), ORGS = Number(process.env.ORGS ?? 16);
  const client = new MongoClient(uri); await client.connect();
  const dbName = 'scale_' + Date.now();
  const services = await createServices(client.db(dbName), { planCaps: { free: 1e9, pro: 1e9, enterprise: 1e9 } }, { now: () => new Date() }, createLogger('silent'));
  const keys: string[] = [];
  const tenants: string[] = [];
  for (let i = 0; i < ORGS; i++) { const org = await services.orgs.create({ name: 'x', plan: 'enterprise', monthlyCap: 1e9 }, new Date()); tenants.push(org._id); keys.push((await services.apiKeys.forOrg(org._id).create('bench', new Date())).key); }
  const procs = await Promise.all(Array.from({ length: N }, () => startServerProcess({ MONGODB_URI: uri, MONGODB_DB: dbName, LOG_LEVEL: 'info', RATE_LIMIT_PER_SECOND: '1000000', RATE_LIMIT_BURST: '1000000' })));
  await new Promise((r) => setTimeout(r, Number(process.env.SETTLE ?? 0)));
  let n = 0;
  const inst = await client.db(dbName).collection('instances').find({}).toArray();
  const ownerUrl = (t: string) => { let best = '', url = ''; for (const d of inst) { const sc = createHash('sha256').update(t).update('\n').update(String(d._id)).digest('hex'); if (sc > best) { best = sc; url = d.url as string; } } return url; };
  const mine = procs.map((p) => keys.filter((_, i) => ownerUrl(tenants[i]!) === p.url));
  if (process.env.AFFINITY) console.log(mine.map((m) => m.length));
  const res = await Promise.all(procs.map((p, pi) => load({ url: p.url, connections: Math.floor(50 / N), requests: [{ method: 'POST', path: '/v1/events', setupRequest: (req) => { const i = n++; const ks = process.env.AFFINITY ? mine[pi]! : keys; return { ...req, headers: { authorization: `Bearer ${ks[i % ks.length]}`, 'content-type': 'application/json' }, body: BODIES[i % BODIES.length] }; } }] })));
  console.log(res.map((r) => `${r.ok} p99 ${r.p99}`).join(' | '));
  for (const p of procs) { const t = await (await fetch(p.metricsUrl)).text(); console.log(t.split('\n').filter((l) => l.startsWith('ingest_')).map((l) => l.replace('ingest_', '')).join('  ')); }
  for (const p of procs) await p.stop();
  await client.db(dbName).dropDatabase(); await client.close();
}
main();
