import { MongoClient } from 'mongodb';
const root = process.argv[2] as string;
async function main() {
  const uri = process.env.MONGODB_URI as string;
  const common = await import(`${root}/scripts/bench/common`);
  const { createServices } = await import(`${root}/src/services/container`);
  const { createLogger } = await import(`${root}/src/logger`);
  const client = new MongoClient(uri);
  await client.connect();
  const dbName = `abl_${Date.now()}`;
  const services = await createServices(client.db(dbName), { planCaps: { free: 10_000, pro: 1_000_000, enterprise: 100_000_000 } }, { now: () => new Date() }, createLogger('silent'));
  const org = await services.orgs.create({ name: 'Bench', plan: 'enterprise', monthlyCap: 1_000_000_000 }, new Date());
  const { key } = await services.apiKeys.forOrg(org._id).create('bench', new Date());
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const service = await common.startProcess('src/main.ts', { ...common.serviceEnv(uri, dbName), DATA_DIR: `/tmp/abl-data` });
  let i = 0;
  const single = await common.loadWithCpu(service.child.pid, { url: service.url, headers, requests: [{ method: 'POST', path: '/v1/events', setupRequest: (req: any) => ({ ...req, body: common.BODIES[i++ % 100] }) }] });
  const batchBody = JSON.stringify({ events: Array.from({ length: 100 }, (_, k) => JSON.parse(common.BODIES[k % 100])) });
  const batch = await common.loadWithCpu(service.child.pid, { url: service.url, headers, connections: 8, requests: [{ method: 'POST', path: '/v1/events/batch', body: batchBody }] });
  await common.stop(service);
  console.log(JSON.stringify({ root, single: Math.round(single.rps), singleCpu: single.cpuMsPerRequest.toFixed(3), batch: Math.round(batch.rps * 100), batchNon2xx: batch.non2xx, singleNon2xx: single.non2xx }));
  await client.db(dbName).dropDatabase();
  await client.close();
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
