/**
 * An application in a project of its own that installed `@audit-ledger/client` from its tarball (with
 * `@trpc/client` and `@trpc/server` for the typed tRPC client): test/client/package.test.ts type-checks it
 * against the package's declarations and runs it. It records TOTAL events through the delivery queue,
 * telling the test when half are stored and waiting until the test has stopped the service (it restarts
 * it meanwhile), then verifies every receipt and reads the events back: pages of the list, the streamed export, one over tRPC.
 * Then, with a second key of the organization (SIGNING_API_KEY), it generates a producer key, binds it and
 * records events signed by it, whose receipts and signatures it verifies.
 */
import { createInterface } from 'node:readline';
import { AuditLedgerClient, DeliveryQueue, type EventInput, generateProducerKey, producerSigner, type Recorded, type StoredEvent } from '@audit-ledger/client';
import type { AppRouter } from '@audit-ledger/client/router';
import { createTRPCClient, httpLink } from '@trpc/client';

const { URL: url = '', API_KEY: apiKey = '', SIGNING_API_KEY: signingApiKey = '', VERIFIER_KEY: verifierKey = '', ORGANIZATION: organization = '', TOTAL = '10000', TAG: tag = 'package' } = process.env;
const total = Number(TOTAL);

const trpc = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${url}/trpc`, headers: { authorization: `Bearer ${apiKey}` } })] });
// The router's types reach this project: a wrong input to a procedure does not compile.
// @ts-expect-error `action` is a string
const wrong = () => trpc.events.create.mutate({ actor: { id: 'a' }, action: 42, resource: { type: 't', id: 'r' } });
void wrong;

const lines = createInterface({ input: process.stdin });
const nextLine = () => new Promise<string>((resolve) => lines.once('line', resolve));

const client = new AuditLedgerClient({ url, apiKey, verify: { verifierKey, organization } });
let retries = 0;
const queue = new DeliveryQueue(client, { backoff: { initialMs: 50, maxMs: 1000 }, onRetry: () => void retries++ });
const event = (i: number): EventInput => ({ actor: { id: `user_${i % 10}` }, action: 'package.recorded', resource: { type: tag, id: `r${i}` }, metadata: { i } });

const pending: Promise<Recorded>[] = [];
for (let i = 0; i < total / 2; i++) pending.push(queue.record(event(i)));
await queue.flush();
console.log('HALF');
await nextLine(); // the service is down now
for (let i = total / 2; i < total; i++) pending.push(queue.record(event(i)));
const recorded = await Promise.all(pending);
await queue.close();
lines.close();

const verified = await client.verifyReceipts(recorded);

// Read back: the first page through the list's iterator, and everything through the streamed export.
const newest: StoredEvent[] = [];
for await (const stored of client.listEvents({ resource_type: tag, limit: 50 })) {
  newest.push(stored);
  if (newest.length === 120) break; // three pages, then the iteration stops asking
}
const exported = await client.exportEvents({ resource_type: tag, format: 'json' });
const readBack = (JSON.parse(await new Response(exported.body).text()) as StoredEvent[]).map((stored) => stored.id);
const first = recorded[0]?.event as StoredEvent;
const ids = new Set(recorded.map((r) => r.event.id));
const viaTrpc = await trpc.events.get.query({ id: first.id });

// Signed: a producer key generated here, bound to the second key before its first event, signing each event.
const pair = await generateProducerKey('consumer.example');
const producer = await producerSigner(pair.privateKey, { organizationId: organization });
const signingClient = new AuditLedgerClient({ url, apiKey: signingApiKey, producer, verify: { verifierKey, organization } });
const binding = await signingClient.bindProducerKey();
const signingQueue = new DeliveryQueue(signingClient, { flushIntervalMs: 10 });
const signedRecorded = await Promise.all(Array.from({ length: 20 }, (_, i) => signingQueue.record({ ...event(i), resource: { type: `${tag}-signed`, id: `s${i}` } })));
await signingQueue.close();
const signedVerified = await signingClient.verifyReceipts(signedRecorded);

console.log(JSON.stringify({
  signed: {
    bound: binding.producer_key === pair.producerKey,
    recorded: signedRecorded.filter((r) => typeof (r.event as StoredEvent).producer_signature === 'string').length,
    verified: signedVerified.verified,
  },
  recorded: recorded.length,
  ids: ids.size,
  inOrder: recorded.every((r, i) => i === 0 || r.receipt.seq > (recorded[i - 1] as Recorded).receipt.seq),
  metadataInOrder: recorded.every((r, i) => (r.event as StoredEvent).metadata.i === i),
  verified,
  pages: { events: new Set(newest.map((stored) => stored.id)).size, newestFirst: newest.every((stored, k) => k === 0 || stored.timestamp <= (newest[k - 1] as StoredEvent).timestamp) },
  readBack: readBack.length,
  readBackIds: new Set(readBack).size,
  readBackMatches: readBack.every((id) => ids.has(id)),
  trpc: { id: viaTrpc.id, resource_id: viaTrpc.resource_id },
  retries,
}));
