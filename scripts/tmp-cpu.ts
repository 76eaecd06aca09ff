import { MongoClient } from 'mongodb';
import { createServices } from '../src/services/container';
import { createLogger } from '../src/logger';
import { BODIES, loadWithCpu, serviceEnv, startProcess, stop } from './bench/common';
async function main() {
  const uri = process.env.MONGODB_URI!;
  const client = new MongoClient(uri); await client.connect();
  const dbName = 'cpu_' + Date.now();
  const services = await createServices(client.db(dbName), { planCaps: { free: 1e9, pro: 1e9, enterprise: 1e9 } }, { now: () => new Date() }, createLogger('silent'));
  const org = await services.orgs.create({ name: 'x', plan: 'enterprise', monthlyCap: 1e9 }, new Date());
  const key = (await services.apiKeys.forOrg(org._id).create('bench', new Date())).key;
  const hello = await startProcess('scripts/bench/helloServer.ts', {});
  const h = await loadWithCpu(hello.child.pid ?? 0, { url: hello.url }); await stop(hello);
  const svc = await startProcess('src/main.ts', serviceEnv(uri, dbName));
  const r = await loadWithCpu(svc.child.pid ?? 0, { url: svc.url, requests: [{ method: 'POST', path: '/v1/events', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: BODIES[0] }] });
  await stop(svc);
  console.log(`ingest ${r.rps.toFixed(0)}/s cpu ${r.cpuMsPerRequest.toFixed(3)} ms; hello ${h.cpuMsPerRequest.toFixed(3)} ms; ratio ${(r.cpuMsPerRequest / h.cpuMsPerRequest).toFixed(1)}x`);
  await client.db(dbName).dropDatabase(); await client.close();
}
main();
