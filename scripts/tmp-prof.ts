import { MongoClient } from 'mongodb';
import { spawn } from 'node:child_process';
import { createServices } from '../src/services/container';
import { createLogger } from '../src/logger';
import { BODIES, load } from './bench/common';
async function main() {
  const uri = process.env.MONGODB_URI!;
  const client = new MongoClient(uri); await client.connect();
  const dbName = 'prof_' + Date.now();
  const services = await createServices(client.db(dbName), { planCaps: { free: 1e9, pro: 1e9, enterprise: 1e9 } }, { now: () => new Date() }, createLogger('silent'));
  const org = await services.orgs.create({ name: 'x', plan: 'enterprise', monthlyCap: 1e9 }, new Date());
  const key = (await services.apiKeys.forOrg(org._id).create('bench', new Date())).key;
  const child = spawn(process.execPath, ['--cpu-prof', '--cpu-prof-dir=/tmp/prof', '--import', 'tsx', 'src/main.ts'], { env: { ...process.env, PORT: '3999', HOST: '127.0.0.1', METRICS_PORT: '0', MONGODB_DB: dbName, LOG_LEVEL: 'info', RATE_LIMIT_PER_SECOND: '1000000', RATE_LIMIT_BURST: '1000000' }, stdio: ['ignore', 'ignore', 'inherit'] });
  await new Promise((r) => setTimeout(r, 4000));
  const r = await load({ url: 'http://127.0.0.1:3999', connections: 50, requests: [{ method: 'POST', path: '/v1/events', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: BODIES[0] }] });
  console.log(r);
  child.kill('SIGINT');
  await new Promise((res) => child.once('exit', res));
  await client.db(dbName).dropDatabase(); await client.close();
}
main();
