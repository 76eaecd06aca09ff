/**
 * Inclusion-proof latency against a point read in the same run: sequential requests (one in flight, as
 * an auditor's script or the dashboard asks) for random events of one organization, proofs first,
 * then `GET /v1/events/:id` for the same events.
 */
import { BATCH_BODIES, BATCH_SIZE } from './batchIngest';
import { load, type Load, serviceWithKey } from './common';

const REQUESTS = 300;

export interface ProofLatency {
  proof: Load;
  get: Load;
}

export async function measureProofLatency(url: string, headers: Record<string, string>, ids: readonly string[]): Promise<ProofLatency> {
  const picks = Array.from({ length: REQUESTS }, () => ids[Math.floor(Math.random() * ids.length)] ?? 'none');
  const sequential = async (path: (id: string) => string) => {
    let next = 0;
    return load({ url, headers, connections: 1, amount: REQUESTS, requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: path(picks[next++ % REQUESTS] as string) }) }] });
  };
  const proof = await sequential((id) => `/v1/events/${id}/proof`);
  const get = await sequential((id) => `/v1/events/${id}`);
  return { proof, get };
}

export function proofLatencyLine(events: number, r: ProofLatency): string {
  return `Proof latency at ${events} events in one organization, ${REQUESTS} sequential requests for random events: ` +
    `\`GET /v1/events/:id/proof\` p50 ${r.proof.p50} ms, p99 ${r.proof.p99} ms (non-2xx ${r.proof.non2xx}); ` +
    `\`GET /v1/events/:id\` p50 ${r.get.p50} ms, p99 ${r.get.p99} ms: ${(r.proof.p50 / Math.max(1, r.get.p50)).toFixed(1)}× at p50.`;
}

/** A fresh organization of `events` events (sent in batches), once a checkpoint covers them all. */
export async function measureProofLatencyAt(uri: string, dbName: string, events: number): Promise<ProofLatency> {
  const { service, headers, close } = await serviceWithKey(uri, dbName);
  try {
    const ids: string[] = [];
    for (let i = 0; ids.length < events; i++) {
      const response = await fetch(`${service.url}/v1/events/batch`, { method: 'POST', headers, body: BATCH_BODIES[i % BATCH_BODIES.length] });
      if (response.status !== 201) throw new Error(`a batch got ${response.status}`);
      ids.push(...((await response.json()) as { events: { id: string }[] }).events.map((e) => e.id));
    }
    for (;;) {
      const checkpoint = (await (await fetch(`${service.url}/v1/ledger/checkpoint`, { headers })).json()) as { tree_size?: number };
      if ((checkpoint.tree_size ?? 0) >= ids.length) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return await measureProofLatency(service.url, headers, ids);
  } finally {
    await close();
  }
}

/** Events for the proof latency of `npm run bench:ledger`: a hundred batches. */
export const PROOF_EVENTS = 100 * BATCH_SIZE;
