/**
 * `npm run bench:client`: the client package from one Node process against one service process
 * (issue 38). Events/s recorded through the DeliveryQueue against single awaited POSTs in the same run
 * (alternating, BENCH_CLIENT_PAIRS pairs of BENCH_SECONDS each); the queue's memory while the service is
 * unreachable and the queue is full (heap after a full GC, per queued event); and what verifying
 * receipts costs per 1,000 (`verifyReceipts`: wall time and this process's CPU), against the time
 * recording 1,000 took; and events/s through the queue with producer signatures (a second key, bound
 * to a generated producer key: each event signed here, its signature checked by the service) against
 * the same queue unsigned, alternating. Recorded in BENCHMARKS.md. Needs MONGODB_URI (`npm run
 * db:ferretdb` prints one).
 */
import { createServer } from 'node:net';
import { AuditLedgerClient, DeliveryQueue, type EventInput, generateProducerKey, producerSigner, QueueFullError, type Recorded } from '../packages/client/src/index.ts';
import { recordBenchmark, runHeading, SECONDS, serviceWithKey } from './bench/common';

const PAIRS = Number(process.env.BENCH_CLIENT_PAIRS ?? 2);
const VERIFY_BATCH = 1000;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc (npm run bench:client does)');

let sequence = 0;
const event = (): EventInput => {
  const i = sequence++;
  return { actor: { id: `user_${i % 100}`, name: 'Bench User' }, action: 'document.updated', resource: { type: 'document', id: `doc_${i}` }, metadata: { i, note: 'an event of a typical size' } };
};

/** Single POSTs, each awaited before the next: what an application without the queue does. */
async function singlePosts(client: AuditLedgerClient): Promise<number> {
  const until = Date.now() + SECONDS * 1000;
  let stored = 0;
  while (Date.now() < until) {
    await client.createEvent(event());
    stored++;
  }
  return stored / SECONDS;
}

/** The queue, fed as fast as it stores, with at most 5,000 receipts awaited at a time. */
async function throughQueue(client: AuditLedgerClient, keep: Recorded[]): Promise<number> {
  const queue = new DeliveryQueue(client);
  const until = Date.now() + SECONDS * 1000;
  const pending: Promise<Recorded>[] = [];
  const started = Date.now();
  while (Date.now() < until) {
    pending.push(queue.record(event()));
    // As an application would: at most 5,000 receipts outstanding (the queue holds 10,000, then makes record() wait).
    if (pending.length > 5000) await pending[pending.length - 5000];
  }
  const recorded = await Promise.all(pending);
  const seconds = (Date.now() - started) / 1000;
  await queue.close();
  keep.push(...recorded);
  return recorded.length / seconds;
}

/** Heap held by a full queue whose service cannot be reached, and what record() does past it. */
async function fullQueueMemory(apiKey: string): Promise<{ capacity: number; heapMiB: number; bytesPerEvent: number; waits: boolean; refused: boolean }> {
  const closed = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => closed.once('listening', resolve));
  const { port } = closed.address() as { port: number };
  await new Promise((resolve) => closed.close(resolve)); // nothing listens there now: every send is refused
  const capacity = 10_000;
  const queue = new DeliveryQueue(new AuditLedgerClient({ url: `http://127.0.0.1:${port}`, apiKey }), { capacity, backoff: { initialMs: 1000, maxMs: 5000 } });
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const held: Promise<unknown>[] = [];
  for (let i = 0; i < capacity; i++) held.push(queue.record(event()).catch(() => undefined));
  // Past capacity record() waits for room, as many as the queue holds; beyond those it refuses.
  let settled = false;
  const waiting = queue.record(event()).then(() => (settled = true), () => (settled = true));
  for (let i = 1; i < capacity; i++) held.push(queue.record(event()).catch(() => undefined));
  const refused = await queue.record(event()).then(() => false, (error: unknown) => error instanceof QueueFullError);
  await new Promise((resolve) => setTimeout(resolve, 200));
  gc?.();
  const heap = process.memoryUsage().heapUsed - before;
  const result = { capacity, heapMiB: heap / 2 ** 20, bytesPerEvent: heap / (2 * capacity), waits: !settled, refused };
  void queue.close().catch(() => undefined);
  void waiting;
  return result;
}

async function verifyCost(client: AuditLedgerClient, recorded: readonly Recorded[]): Promise<{ wallMs: number; cpuMs: number; batches: number }> {
  let wallMs = 0;
  let cpuMs = 0;
  let batches = 0;
  for (let at = 0; at + VERIFY_BATCH <= recorded.length && batches < 5; at += VERIFY_BATCH) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    const verified = await client.verifyReceipts(recorded.slice(at, at + VERIFY_BATCH));
    if (verified.verified !== VERIFY_BATCH) throw new Error(`verified ${verified.verified} of ${VERIFY_BATCH}`);
    wallMs += performance.now() - started;
    const used = process.cpuUsage(cpu);
    cpuMs += (used.user + used.system) / 1000;
    batches++;
  }
  return { wallMs: wallMs / batches, cpuMs: cpuMs / batches, batches };
}

async function main(): Promise<void> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('MONGODB_URI is not set (npm run db:ferretdb prints one)');
  const heading = await runHeading(uri, `bench:client, ${PAIRS} pairs of ${SECONDS} s, one Node process, one service process`);
  const { service, orgId, headers, newKey, close } = await serviceWithKey(uri, `bench_client_${Date.now()}`);
  try {
    const apiKey = (headers.authorization as string).slice('Bearer '.length);
    const key = (await (await fetch(`${service.url}/v1/ledger/key`, { headers })).json()) as { verifier_key: string };
    const client = new AuditLedgerClient({ url: service.url, apiKey, verify: { verifierKey: key.verifier_key, organization: orgId } });
    const single: number[] = [];
    const queued: number[] = [];
    const recorded: Recorded[] = [];
    for (let pair = 0; pair < PAIRS; pair++) {
      // Alternating order, so neither side always runs on a warmer service.
      if (pair % 2 === 0) {
        single.push(await singlePosts(client));
        queued.push(await throughQueue(client, recorded));
      } else {
        queued.push(await throughQueue(client, recorded));
        single.push(await singlePosts(client));
      }
      process.stdout.write(`pair ${pair + 1}: single ${single.at(-1)?.toFixed(0)} events/s, queue ${queued.at(-1)?.toFixed(0)} events/s\n`);
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    // Producer signatures: the same queue, signing, on a key bound before its first event.
    const producer = await generateProducerKey('bench.producer');
    const signingClient = new AuditLedgerClient({ url: service.url, apiKey: await newKey(), producer: await producerSigner(producer.privateKey, { organizationId: orgId }) });
    await signingClient.bindProducerKey();
    const unsignedQueue: number[] = [];
    const signedQueue: number[] = [];
    for (let pair = 0; pair < PAIRS; pair++) {
      const runs = [async () => unsignedQueue.push(await throughQueue(client, [])), async () => signedQueue.push(await throughQueue(signingClient, []))];
      for (const run of pair % 2 === 0 ? runs : runs.reverse()) await run();
      process.stdout.write(`pair ${pair + 1}: queue unsigned ${unsignedQueue.at(-1)?.toFixed(0)} events/s, signed ${signedQueue.at(-1)?.toFixed(0)} events/s\n`);
    }
    const memory = await fullQueueMemory(apiKey);
    const verify = await verifyCost(client, recorded);
    const recordMsPer1000 = 1_000_000 / mean(queued);
    const lines = [
      heading,
      '',
      '| measure | figure | against the same run |',
      '|---|---|---|',
      `| single awaited POSTs | ${mean(single).toFixed(0)} events/s (${single.map((x) => x.toFixed(0)).join(', ')}) | 1.00× |`,
      `| DeliveryQueue (batches of 100, 1 in flight) | ${mean(queued).toFixed(0)} events/s (${queued.map((x) => x.toFixed(0)).join(', ')}) | **${(mean(queued) / mean(single)).toFixed(1)}×** single POSTs |`,
      `| full queue, service unreachable | ${memory.heapMiB.toFixed(1)} MiB of heap for ${memory.capacity.toLocaleString('en')} held + ${(memory.capacity - 1).toLocaleString('en')} waiting, ${memory.bytesPerEvent.toFixed(0)} bytes per event; past capacity record() ${memory.waits ? 'waits' : 'DID NOT WAIT'}, past twice ${memory.refused ? 'refuses (QueueFullError)' : 'DID NOT REFUSE'} | — |`,
      `| DeliveryQueue with producer signatures (signed here, checked by the service) | ${mean(signedQueue).toFixed(0)} events/s (${signedQueue.map((x) => x.toFixed(0)).join(', ')}) | **${(mean(signedQueue) / mean(unsignedQueue)).toFixed(2)}×** the same queue unsigned (${unsignedQueue.map((x) => x.toFixed(0)).join(', ')}) |`,
      `| verifyReceipts, per 1,000 receipts (${verify.batches} batches) | ${verify.wallMs.toFixed(0)} ms wall, ${verify.cpuMs.toFixed(0)} ms CPU of this process | ${(verify.wallMs / recordMsPer1000).toFixed(2)}× the time recording 1,000 took through the queue (${recordMsPer1000.toFixed(0)} ms) |`,
      '',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    recordBenchmark(lines);
  } finally {
    await close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
