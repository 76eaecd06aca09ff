/**
 * `stream verify` says what is wrong with a delivery, not just that something is: a gap in the middle
 * names the missing sequence numbers, a delivery cut short says events are missing from its end, and an
 * edited event is named as edited (whether its receipt was left alone or forged to match it). The
 * delivery is a real webhook stream's, written as a receiver would keep it: one `.jsonl` per batch, the
 * items and then the batch's checkpoint (from `audit-ledger-checkpoint`).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TEvent } from '../../src/domain/event';
import { hashInputOfEvent } from '../../src/domain/eventFields';
import { eventHashes } from '../../src/domain/ledger/eventHash';
import { call, eventBody, eventually } from '../helpers/api';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from '../helpers/harness';
import { runCli } from '../helpers/processes';
import { type Received, webhookReceiver } from '../helpers/streamReceivers';

interface Item {
  event: TEvent;
  receipt: { leaf_index: number; event_sha256: string; event_commitment?: string; salt?: string };
}

let app: TestApp;
let root: string;
let batches: { items: Item[]; checkpoint: string }[];
/** The newest checkpoint, fetched apart from the delivery (what `--checkpoint` is given). */
let newestFile: string;
let newestSize: number;
/** The sequence numbers the delivered checkpoints are of. */
let checkpointSizes: number[];

const seqOf = (item: Item) => item.receipt.leaf_index + 1;
const sizeOf = (note: string) => Number(note.split('\n')[1]);

async function newest(org: TestOrg): Promise<{ tree_size: number; checkpoint: string }> {
  return (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body;
}

/** Waits until the stream has delivered the first `count` events of the log. */
async function delivered(org: TestOrg, id: string, count: number): Promise<void> {
  await eventually(`${count} events delivered`, async () => (await call(`${app.url}/v1/streams/${id}`, { key: org.key })).body.delivered_seq === count);
}

function batchOf(received: Received): { items: Item[]; checkpoint: string } {
  return { items: JSON.parse(received.body) as Item[], checkpoint: Buffer.from(received.headers['audit-ledger-checkpoint'] ?? '', 'base64').toString('utf8') };
}

beforeAll(async () => {
  app = await startTestApp({ label: 'stream_verify' });
  root = mkdtempSync(join(tmpdir(), 'stream-verify-'));
  const org = await app.org();
  let secret = '';
  const receiver = await webhookReceiver(() => secret).start();
  try {
    const created = await call(`${app.url}/v1/streams`, { key: org.key, body: { name: 'siem', destination: { type: 'webhook', url: receiver.url }, start_seq: 1 } });
    expect(created.status).toBe(201);
    secret = created.body.signing_secret as string;
    // The stream's creation record (audit_ledger.stream.created) is 1, in a batch of its own; ten more events 2–11.
    await delivered(org, created.body.id as string, 1);
    expect((await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events: Array.from({ length: 10 }, (_, i) => eventBody({ actor: { id: `bulk${i}` } })) } })).status).toBe(201);
    await delivered(org, created.body.id as string, 11);
    // Then 12–17 one at a time, each delivered before the next: batches of one event, each with its own
    // checkpoint, so that consecutive checkpoints can pin an edited leaf to one sequence number.
    for (let seq = 12; seq <= 17; seq++) {
      expect((await call(`${app.url}/v1/events`, { key: org.key, body: eventBody({ actor: { id: `single${seq}` } }) })).status).toBe(201);
      await delivered(org, created.body.id as string, seq);
    }
  } finally {
    await receiver.stop();
  }
  batches = receiver.accepted.map(batchOf);
  checkpointSizes = [...new Set(batches.map((b) => sizeOf(b.checkpoint)))].sort((a, b) => a - b);
  const checkpoint = await newest(org);
  newestSize = checkpoint.tree_size;
  newestFile = join(root, 'newest.checkpoint');
  writeFileSync(newestFile, checkpoint.checkpoint);
}, 120_000);
afterAll(async () => {
  rmSync(root, { recursive: true, force: true });
  await app.close();
});

/** Writes the delivery as a receiver keeps it, each item through `change` (null: left out); answers the directory. */
function delivery(name: string, change: (item: Item) => Item | null = (item) => item): string {
  const dir = join(root, name);
  mkdirSync(dir);
  batches.forEach((batch, i) => {
    const items = batch.items.map(change).filter((item): item is Item => item !== null);
    const lines = [...items.map((item) => JSON.stringify(item)), JSON.stringify({ audit_ledger_checkpoint: { note: batch.checkpoint } })];
    writeFileSync(join(dir, `batch-${String(i).padStart(4, '0')}.jsonl`), `${lines.join('\n')}\n`);
  });
  return dir;
}

/** The file and line an item with sequence number `seq` was written at by `delivery`. */
function whereIs(dir: string, seq: number): string {
  const batch = batches.findIndex((b) => b.items.some((item) => seqOf(item) === seq));
  const line = (batches[batch]?.items.findIndex((item) => seqOf(item) === seq) ?? -1) + 1;
  return `${join(dir, `batch-${String(batch).padStart(4, '0')}.jsonl`)}:${line}`;
}

async function verify(dir: string): Promise<{ code: number; failures: string[]; summary: Record<string, unknown> }> {
  const run = await runCli(['stream', 'verify', '--verifier-key', TEST_LEDGER_SIGNER.text, '--checkpoint', newestFile, dir, '--json'], {});
  const summary = JSON.parse(run.stdout) as Record<string, unknown> & { failures: string[] };
  return { code: run.code, failures: summary.failures, summary };
}

test('the delivery as it came verifies up to the newest checkpoint', async () => {
  expect(newestSize).toBe(17);
  const good = await verify(delivery('good'));
  expect(good.failures).toEqual([]);
  expect(good.summary).toMatchObject({ ok: true, first_seq: 1, last_seq: 17, verified_size: 17 });
  expect(good.code).toBe(0);
});

test('a gap in the middle names the missing sequence numbers, and is not called missing from the end', async () => {
  const gapped = await verify(delivery('middle', (item) => ([4, 5, 6].includes(seqOf(item)) ? null : item)));
  expect(gapped.failures).toEqual(['events 4–6 are missing from the middle of the stream: 3 sequence number(s) between 1 and 17 were never delivered, and no retention entry removed them']);
  expect(gapped.code).toBe(1);
  const two = await verify(delivery('middle-two', (item) => ([3, 9, 10].includes(seqOf(item)) ? null : item)));
  expect(two.failures).toEqual(['events 3, 9–10 are missing from the middle of the stream: 3 sequence number(s) between 1 and 17 were never delivered, and no retention entry removed them']);
  expect(two.code).toBe(1);
});

test('a delivery cut short is missing events from its end, named', async () => {
  const short = await verify(delivery('end', (item) => (seqOf(item) > 15 ? null : item)));
  expect(short.failures).toEqual(['the delivery stops before the given checkpoint of size 17 (delivered up to sequence number 15): events 16–17 are missing from its end']);
  expect(short.code).toBe(1);
});

const edit = (item: Item): Item => ({ ...item, event: { ...item.event, actor_id: `${item.event.actor_id}-edited` } });
/** The event edited and its receipt recomputed to match (with its own salt): it hashes to its receipt, not to its leaf. */
const forge = (item: Item): Item => {
  const changed = edit(item);
  return { ...changed, receipt: { leaf_index: item.receipt.leaf_index, ...eventHashes(hashInputOfEvent(changed.event), item.receipt.salt) } };
};
/** The sequence numbers a leaf changed at `seq` is pinned to: after the largest checkpoint before it, up to the first one that includes it. */
function between(seq: number): [number, number] {
  return [(checkpointSizes.filter((size) => size < seq).at(-1) ?? 0) + 1, checkpointSizes.find((size) => size >= seq) ?? 0];
}
/** What the checkpoints show of a leaf changed at `seq`. */
function evidence(seq: number): string {
  const [lo, hi] = between(seq);
  const later = checkpointSizes.filter((size) => size > hi).length;
  const good = lo === 2 ? 'the event 1 reproduces the signed checkpoint of size 1; ' : lo > 2 ? `the events 1–${lo - 1} reproduce the signed checkpoint of size ${lo - 1}; ` : '';
  return `${good}the events 1–${hi} do not reproduce the signed checkpoint of size ${hi}${later ? `, nor ${later} later one(s)` : ''}`;
}

test('an edited event is named as edited, not as missing', async () => {
  // Its receipt left as it was: the event no longer hashes to it.
  const dir = delivery('edited', (item) => (seqOf(item) === 5 ? edit(item) : item));
  const edited = await verify(dir);
  const id = batches.flatMap((b) => b.items).find((item) => seqOf(item) === 5)?.event.id ?? '';
  expect(edited.failures).toEqual([`${whereIs(dir, 5)}: the event at sequence number 5 (${id}) was edited: it does not hash to its receipt`]);
  expect(edited.code).toBe(1);

  // Its receipt forged to match: only the signed leaf can tell, and consecutive checkpoints say which one.
  const pinned = checkpointSizes.find((size) => size > 1 && checkpointSizes.includes(size - 1)) ?? 0;
  expect(pinned).toBeGreaterThan(11);
  const forged = await verify(delivery('forged', (item) => (seqOf(item) === pinned ? forge(item) : item)));
  expect(forged.failures).toEqual([`the event at sequence number ${pinned} was edited: it does not match its signed leaf (${evidence(pinned)})`]);
  expect(forged.code).toBe(1);

  // Forged in the bulk batch, whose one checkpoint covers ten events: the leaf is one of those.
  const inBulk = await verify(delivery('forged-bulk', (item) => (seqOf(item) === 5 ? forge(item) : item)));
  const [lo, hi] = between(5);
  expect(hi - lo).toBeGreaterThan(0);
  expect(inBulk.failures).toEqual([`an event at sequence numbers ${lo}–${hi} was edited: it does not match its signed leaf (${evidence(5)})`]);
  expect(inBulk.code).toBe(1);
});
