/**
 * A closed loop of clients behind a round-robin load balancer: `connections` clients, each sending its
 * next single-event create on the answer to the previous one, to the next instance in turn. Every
 * instance gets the same number of requests, however fast it answers (with a client's own connections
 * per instance, the fastest instance, the writer, gets more). Counted per instance, like spreadLoad.
 */
import { Agent, request } from 'node:http';
import { BODIES, type Load } from './common';

function post(agent: Agent, url: URL, key: string, body: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => { resolve(res.statusCode ?? 0); });
      res.on('error', () => { resolve(0); });
    });
    req.setTimeout(60_000, () => req.destroy());
    req.on('error', () => { resolve(0); });
    req.end(body);
  });
}

/** Drives the instances at `urls` for some seconds; resolves with each instance's counts. */
export function roundRobinLoad(urls: readonly string[], keys: readonly string[], connections: number): (seconds: number) => Promise<Load[]> {
  const targets = urls.map((url) => ({ url: new URL('/v1/events', url), agent: new Agent({ keepAlive: true, maxSockets: connections }) }));
  let sent = 0;
  return async (seconds) => {
    const counts = targets.map(() => ({ ok: 0, non2xx: 0, errors: 0 }));
    const until = Date.now() + seconds * 1000;
    const client = async () => {
      while (Date.now() < until) {
        const i = sent++;
        const target = i % targets.length;
        const { url, agent } = targets[target] as (typeof targets)[number];
        const status = await post(agent, url, keys[Math.floor(i / targets.length) % keys.length] ?? '', BODIES[i % BODIES.length] ?? '');
        const count = counts[target] as (typeof counts)[number];
        if (status >= 200 && status < 300) count.ok++;
        else if (status === 0) count.errors++;
        else count.non2xx++;
      }
    };
    await Promise.all(Array.from({ length: connections }, client));
    return counts.map((c) => ({ ok: c.ok, timeouts: 0, rps: c.ok / seconds, p50: 0, p99: 0, non2xx: c.non2xx, errors: c.errors }));
  };
}
