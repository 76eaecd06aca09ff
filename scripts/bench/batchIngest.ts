/**
 * Batch ingest (POST /v1/events/batch, 100 events per request) and the cost of Idempotency-Keys, against
 * a running service. Every request of the keyed runs carries a key of its own, as a careful client's
 * first attempts do: each claims a key before its events are written.
 */
import type autocannon from 'autocannon';
import { BODIES, load, loadWithCpu, type Load } from './common';

export const BATCH_SIZE = 100;
/** Requests in flight: 800 events, enough to fill the writer's rounds without queueing for seconds. */
const BATCH_CONNECTIONS = 8;

export const BATCH_BODIES = Array.from({ length: BODIES.length }, (_, b) =>
  `{"events":[${Array.from({ length: BATCH_SIZE }, (_, i) => BODIES[(b + i) % BODIES.length]).join(',')}]}`,
);

export interface BatchFigures {
  /** Events per second, and what the load saw per request. */
  batch: BatchLoad;
  batchKeyed: Load & { eventsPerSecond: number };
  singleKeyed: Load;
}

export type BatchLoad = Load & { eventsPerSecond: number; cpuMsPerEvent: number };

/** Batches without keys, from as many connections as the writer's rounds take, with the server's CPU per event. */
export async function loadBatches(url: string, headers: Record<string, string>, pid: number, seconds?: number): Promise<BatchLoad> {
  let next = 0;
  const requests: autocannon.Request[] = [{ method: 'POST', path: '/v1/events/batch', setupRequest: (req) => ({ ...req, body: BATCH_BODIES[next++ % BATCH_BODIES.length] }) }];
  const batch = await loadWithCpu(pid, { url, headers, connections: BATCH_CONNECTIONS, requests, ...(seconds === undefined ? {} : { duration: seconds }) });
  return { ...batch, eventsPerSecond: batch.rps * BATCH_SIZE, cpuMsPerEvent: batch.cpuMsPerRequest / BATCH_SIZE };
}

export async function measureBatchIngest(url: string, headers: Record<string, string>, pid: number): Promise<BatchFigures> {
  const run = `${Date.now()}`;
  let next = 0;
  const keyedBatches: autocannon.Request[] = [{
    method: 'POST',
    path: '/v1/events/batch',
    setupRequest: (req) => {
      const n = next++;
      return { ...req, body: BATCH_BODIES[n % BATCH_BODIES.length], headers: { ...headers, 'idempotency-key': `bench-${run}-b${n}` } };
    },
  }];
  const batch = await loadBatches(url, headers, pid);
  const batchKeyed = await load({ url, headers, connections: BATCH_CONNECTIONS, requests: keyedBatches });
  const singleKeyed = await load({
    url,
    headers,
    requests: [{
      method: 'POST',
      path: '/v1/events',
      setupRequest: (req) => {
        const n = next++;
        return { ...req, body: BODIES[n % BODIES.length], headers: { ...headers, 'idempotency-key': `bench-${run}-s${n}` } };
      },
    }],
  });
  return {
    batch,
    batchKeyed: { ...batchKeyed, eventsPerSecond: batchKeyed.rps * BATCH_SIZE },
    singleKeyed,
  };
}
