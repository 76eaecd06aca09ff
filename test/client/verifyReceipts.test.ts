/**
 * `client.verifyReceipts()` (packages/client/src/verify.ts) against the real service with a witness
 * (our `witness serve`, a separate process): receipts proven included under a checkpoint signed by the
 * pinned key, the checkpoint consistent with the one a previous run saved, witnessed by the policy's
 * quorum. And each lie it must catch, put in by a `fetch` that alters what the service answered: an
 * altered event, a rolled-back checkpoint, a consistency proof of another history, a proof of another
 * leaf, a checkpoint not signed by the pinned key, a witness that did not cosign.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditLedgerClient, DeliveryQueue, type EventInput, type Recorded, type SeenCheckpoint, VerificationError, type VerifyOptions } from '../../packages/client/src';
import { cosignerKeyFileText, parseCosignerKeyFile } from '../../src/domain/ledger/cosigner';
import { signerFromSeed } from '../../src/domain/ledger/note';
import { parsePolicy } from '../../src/domain/ledger/witnessFormats';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from '../helpers/harness';
import { startWitnessProcess, type WitnessProcess } from '../helpers/processes';

const INSTALLATION_ORIGIN = `${TEST_LEDGER_SIGNER.name}/installation`;

let dir: string;
let witness: WitnessProcess;
let policy: string;
let app: TestApp;
let org: TestOrg;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'verify-receipts-'));
  witness = await startWitnessProcess(dir, 'witness.example/one', `log ${INSTALLATION_ORIGIN} ${TEST_LEDGER_SIGNER.text}\n`);
  policy = `witness one ${witness.vkey} ${witness.url}\nquorum one\n`;
  app = await startTestApp({ label: 'verifyreceipts', witnessPolicy: parsePolicy(policy) });
  org = await app.org();
}, 60_000);

afterAll(async () => {
  await app.close();
  await witness.stop();
  rmSync(dir, { recursive: true, force: true });
});

const events = (n: number, tag: string): EventInput[] =>
  Array.from({ length: n }, (_, i) => ({ actor: { id: `user_${i}` }, action: 'document.signed', resource: { type: 'document', id: `${tag}-${i}` } }));

/** A place to keep the seen checkpoint, as a file or a database row would. */
function memoryStore() {
  const saved: SeenCheckpoint[] = [];
  return { saved, load: () => saved.at(-1) ?? null, save: (seen: SeenCheckpoint) => void saved.push(seen) };
}

/** A fetch that lets `alter` rewrite the JSON answers of the paths it matches, and counts what it forwarded. */
function alteringFetch(alter: (path: string, body: Record<string, unknown>) => Record<string, unknown> | undefined = () => undefined) {
  const paths: string[] = [];
  const altered: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    const path = new URL(input instanceof Request ? input.url : String(input)).pathname;
    paths.push(path);
    if (!response.ok) return response;
    const body = (await response.json()) as Record<string, unknown>;
    return Response.json(alter(path, body) ?? body, { status: response.status, headers: response.headers });
  };
  return { fetch: altered, paths };
}

function clientOf(options: { fetch?: typeof fetch; verify?: Partial<VerifyOptions> } = {}) {
  return new AuditLedgerClient({
    url: app.url,
    apiKey: org.key,
    ...(options.fetch ? { fetch: options.fetch } : {}),
    verify: { verifierKey: TEST_LEDGER_SIGNER.text, organization: org.id, witnessPolicy: policy, waitMs: 30_000, ...options.verify },
  });
}

async function failuresOf(promise: Promise<unknown>): Promise<string[]> {
  const error = await promise.then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(VerificationError);
  return (error as VerificationError).failures;
}

test('receipts verify: included under the signed checkpoint, witnessed; the next run checks the log only grew from what was saved', async () => {
  const store = memoryStore();
  const first = (await clientOf().createBatch(events(25, 'a'))).recorded;
  const one = await clientOf({ verify: { verifierKey: TEST_LEDGER_SIGNER.text, seen: store } }).verifyReceipts(first);
  expect(one).toMatchObject({ verified: 25, removed: 0, cosigned: ['one'] });
  expect(one.treeSize).toBeGreaterThanOrEqual(Math.max(...first.map((r) => r.receipt.seq)));
  expect(store.saved).toHaveLength(1);
  expect(store.saved[0]).toMatchObject({ origin: `${TEST_LEDGER_SIGNER.name}/${org.id}`, tree_size: one.treeSize });

  // Another process, the same store: it proves the newer checkpoint extends the saved one.
  const second = (await clientOf().createBatch(events(10, 'b'))).recorded;
  const counting = alteringFetch();
  const two = await clientOf({ fetch: counting.fetch, verify: { verifierKey: TEST_LEDGER_SIGNER.text, seen: store } }).verifyReceipts(second);
  expect(two.treeSize).toBeGreaterThan(one.treeSize);
  expect(counting.paths.filter((p) => p === '/v1/ledger/consistency')).toHaveLength(1);
  expect(counting.paths.filter((p) => p === '/v1/ledger/proofs')).toHaveLength(1); // every inclusion path in one answer
  expect(store.saved.at(-1)?.tree_size).toBe(two.treeSize);
}, 60_000);

test('each lie fails with a VerificationError that names it', async () => {
  const recorded = (await clientOf().createBatch(events(5, 'c'))).recorded;
  const store = memoryStore();
  await clientOf({ verify: { verifierKey: TEST_LEDGER_SIGNER.text, seen: store } }).verifyReceipts(recorded);
  const olderAnswer = await clientOf().checkpoint();

  // The event the application holds differs from the one the service hashed.
  const altered: Recorded[] = recorded.map((r, i) => (i === 2 ? { ...r, event: { ...r.event, action: 'document.deleted' } } : r));
  expect((await failuresOf(clientOf().verifyReceipts(altered))).join('\n')).toContain(`event ${recorded[2]?.event.id}: the event differs from the one the server hashed`);

  // A later checkpoint was saved; the service answers an older one, genuinely signed: a rollback.
  await clientOf().createBatch(events(3, 'd'));
  const newer = memoryStore();
  await clientOf({ verify: { verifierKey: TEST_LEDGER_SIGNER.text, seen: newer } }).verifyReceipts((await clientOf().createBatch(events(1, 'e'))).recorded);
  const rollback = alteringFetch((path) => (path === '/v1/ledger/checkpoint' ? olderAnswer : undefined));
  expect((await failuresOf(clientOf({ fetch: rollback.fetch, verify: { verifierKey: TEST_LEDGER_SIGNER.text, seen: newer } }).verifyReceipts(recorded))).join('\n')).toMatch(/fewer than the \d+ seen before: it was rewritten/);

  // The newer checkpoint does not extend the saved one: the consistency proof is of another history.
  const forked = alteringFetch((path, body) => (path === '/v1/ledger/consistency' ? { ...body, proof: (body.proof as string[]).map(() => randomBytes(32).toString('base64')) } : undefined));
  expect((await failuresOf(clientOf({ fetch: forked.fetch, verify: { verifierKey: TEST_LEDGER_SIGNER.text, seen: store } }).verifyReceipts(recorded))).join('\n')).toMatch(/does not extend the one of \d+ seen before/);

  // A proof of another leaf than the receipt's, and a proof that leaves an event out.
  const target = recorded[0]?.event.id;
  const otherLeaf = alteringFetch((path, body) => (path === '/v1/ledger/proofs' ? { ...body, proofs: (body.proofs as { event_id: string; leaf_index: number }[]).map((p) => (p.event_id === target ? { ...p, leaf_index: p.leaf_index + 1 } : p)) } : undefined));
  const otherLeafFailures = (await failuresOf(clientOf({ fetch: otherLeaf.fetch }).verifyReceipts(recorded))).join('\n');
  expect(otherLeafFailures).toContain(`event ${target}: its proof is of another leaf than its receipt`);
  const leftOut = alteringFetch((path, body) => (path === '/v1/ledger/proofs' ? { ...body, proofs: (body.proofs as { event_id: string }[]).filter((p) => p.event_id !== target) } : undefined));
  expect((await failuresOf(clientOf({ fetch: leftOut.fetch }).verifyReceipts(recorded))).join('\n')).toContain(`event ${target}: the service proves no such event`);
  // A path that does not lead to the signed root.
  const badPath = alteringFetch((path, body) => (path === '/v1/ledger/proofs' ? { ...body, proofs: (body.proofs as { event_id: string; inclusion_path: string[] }[]).map((p) => (p.event_id === target ? { ...p, inclusion_path: p.inclusion_path.map(() => randomBytes(32).toString('base64')) } : p)) } : undefined));
  expect((await failuresOf(clientOf({ fetch: badPath.fetch }).verifyReceipts(recorded))).join('\n')).toMatch(new RegExp(`event ${target}: the event is not sequence number \\d+ of the signed tree`));

  // Checkpoints not signed by the key the application pinned (another key of the same name).
  const otherKey = signerFromSeed(TEST_LEDGER_SIGNER.name, randomBytes(32)).text;
  expect((await failuresOf(clientOf({ verify: { verifierKey: otherKey } }).verifyReceipts(recorded))).join('\n')).toContain(`the newest checkpoint is not signed by ${TEST_LEDGER_SIGNER.name}'s pinned key`);

  // Another organization's log, genuinely signed and witnessed, answered for this one's.
  const other = await app.org();
  const theirs = new AuditLedgerClient({ url: app.url, apiKey: other.key });
  await theirs.createBatch(events(5, 'other'));
  const swapped: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    return fetch(url, url.pathname.startsWith('/v1/ledger/') ? { ...init, headers: { authorization: `Bearer ${other.key}` } } : init);
  };
  expect((await failuresOf(clientOf({ fetch: swapped }).verifyReceipts(recorded))).join('\n')).toContain(`not of ${TEST_LEDGER_SIGNER.name}/${org.id}`);

  // A removal claimed by the receipt alone, or a removed receipt outside the tree: no proof skipped.
  const first = recorded[0] as Recorded;
  const halfRemoved: Recorded = { event: first.event, receipt: { seq: first.receipt.seq, leaf_index: first.receipt.leaf_index, removed: true } };
  expect((await failuresOf(clientOf().verifyReceipts([halfRemoved]))).join('\n')).toContain('its receipt and its event disagree on whether it was removed');
  const farAway: Recorded = { event: { id: first.event.id, removed: 'erased', removed_by: 1 }, receipt: { seq: 1_000_000_000, leaf_index: 999_999_999, removed: true } };
  expect((await failuresOf(clientOf({ verify: { waitMs: 1000 } }).verifyReceipts([farAway]))).join('\n')).toContain('sequence number 1000000000 is not in it');

  // A policy whose witness never cosigned.
  const nobody = parseCosignerKeyFile(cosignerKeyFileText('witness.example/stranger', randomBytes(32))).text;
  expect((await failuresOf(clientOf({ verify: { verifierKey: TEST_LEDGER_SIGNER.text, witnessPolicy: `witness stranger ${nobody}\nquorum stranger\n` } }).verifyReceipts(recorded))).join('\n')).toContain("cosigned by no witness of the policy: the policy's quorum (stranger) is not met");
}, 90_000);

test('an answer that stored an event other than sent rejects its record(): its receipt would prove what the application never said', async () => {
  const lying = alteringFetch((path, body) => (path === '/v1/events/batch' ? { ...body, events: (body.events as Record<string, unknown>[]).map((e, i) => (i === 1 ? { ...e, action: 'document.deleted', metadata: { changed: true } } : e)) } : undefined));
  const queue = new DeliveryQueue(clientOf({ fetch: lying.fetch }), { flushIntervalMs: 10 });
  // Defaults and normal forms are not differences: names left out, a timestamp without milliseconds, metadata keys in another order.
  const sent: EventInput[] = [
    { actor: { id: 'u1' }, action: 'document.signed', resource: { type: 'document', id: 'f0' }, timestamp: '2026-11-27T10:30:00Z', organization_id: 'customer_1' },
    { actor: { id: 'u2', name: 'Ada' }, action: 'document.signed', resource: { type: 'document', id: 'f1' }, metadata: { a: 1 } },
    { actor: { id: 'u3', email: 'u3@example.com' }, action: 'document.signed', resource: { type: 'document', id: 'f2', name: 'Contract' }, metadata: { z: [1, { y: 2, x: 1 }], a: 'b' } },
  ];
  const outcomes = await Promise.allSettled(sent.map((e) => queue.record(e)));
  await queue.close();
  expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  const reason = (outcomes[1] as PromiseRejectedResult).reason as VerificationError;
  expect(reason).toBeInstanceOf(VerificationError);
  expect(reason.failures[0]).toMatch(/the service answered it stored with action, metadata other than sent$/);
});
