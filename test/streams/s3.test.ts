/**
 * A log stream to S3-compatible storage: a real server (versitygw, built from the Go module proxy),
 * objects written with SigV4 by the AWS SDK at keys that sort by sequence, gzip'd JSON lines with the
 * batch's checkpoint; `stream verify` over the bucket's directory proves the delivered events are the
 * log's leaves 1…N and fails when an object is changed or deleted.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { call, eventBody, eventually } from '../helpers/api';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp } from '../helpers/harness';
import { runCli } from '../helpers/processes';
import { type S3Server, startS3Server } from '../helpers/s3Server';

let app: TestApp;
let s3: S3Server;
beforeAll(async () => {
  [app, s3] = await Promise.all([startTestApp({ label: 'streams_s3' }), startS3Server(['audit'])]);
}, 660_000);
afterAll(async () => {
  await app.close();
  await s3.stop();
});

const files = (dir: string): string[] => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith('.jsonl.gz')).map((e) => join(e.parentPath, e.name)).sort();

test('objects at sorted keys, gzip\'d JSON lines with receipts and the checkpoint; stream verify proves them the log and catches a change or a deletion', async () => {
  const org = await app.org();
  const fill = async (from: number, to: number) => {
    for (let i = from; i < to; i += 100) {
      const events = Array.from({ length: 100 }, (_, j) => eventBody({ actor: { id: `u${i + j}` } }));
      expect((await call(`${app.url}/v1/events/batch`, { key: org.key, body: { events } })).status).toBe(201);
    }
  };
  await fill(0, 400);
  const created = await call(`${app.url}/v1/streams`, {
    key: org.key,
    body: {
      name: 'archive', format: 'ocsf', start_seq: 1,
      destination: { type: 's3', endpoint: s3.endpoint, region: s3.region, bucket: 'audit', prefix: 'logs/', path_style: true, access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
    },
  });
  expect(created.status).toBe(201);
  expect(created.text).not.toContain(s3.secretAccessKey);
  const delivered = async (n: number) => (await call(`${app.url}/v1/streams/${created.body.id}`, { key: org.key })).body.delivered_seq === n;
  // In three parts, so that there are several objects. The stream's creation record (audit_ledger.stream.created) is 401.
  await eventually('401 events in S3', () => delivered(401), 60_000);
  await fill(400, 800);
  await eventually('801 events in S3', () => delivered(801), 60_000);
  await fill(800, 1200);
  await eventually('1201 events in S3', () => delivered(1201), 60_000);

  const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: 'audit', Prefix: `logs/${org.id}/` }));
  const keys = (listed.Contents ?? []).map((o) => o.Key ?? '');
  expect(keys.length).toBeGreaterThan(0);
  for (const key of keys) expect(key).toMatch(new RegExp(`^logs/${org.id}/\\d{4}/\\d{2}/\\d{2}/\\d{12}-\\d{12}\\.jsonl\\.gz$`));
  const object = await s3.client.send(new GetObjectCommand({ Bucket: 'audit', Key: keys[0] }));
  const lines = gunzipSync(Buffer.from(await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray())).toString('utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);
  expect(lines[0]).toMatchObject({ class_uid: 6003, unmapped: { receipt: { leaf_index: 0 } } });
  expect(lines.at(-1)?.audit_ledger_checkpoint.note).toContain(`${TEST_LEDGER_SIGNER.name}/${org.id}\n`);

  const dir = join(s3.root, 'audit', 'logs', org.id);
  // The newest checkpoint, got from the service apart from the delivery: the delivery must reach it.
  const checkpointFile = join(s3.root, 'checkpoint.txt');
  writeFileSync(checkpointFile, (await call(`${app.url}/v1/ledger/checkpoint`, { key: org.key })).body.checkpoint as string);
  const verify = () => runCli(['stream', 'verify', '--verifier-key', TEST_LEDGER_SIGNER.text, '--checkpoint', checkpointFile, dir, '--json'], {});
  const good = await verify();
  expect(good.code).toBe(0);
  expect(JSON.parse(good.stdout)).toMatchObject({ ok: true, organization: org.id, events: 1201, first_seq: 1, last_seq: 1201, verified_size: 1201 });

  // One event changed in place: its hash no longer matches its receipt.
  const [first, second] = files(dir);
  const original = readFileSync(first ?? '');
  const changed = gunzipSync(original).toString('utf8').replace('"actor_id":"u3"', '"actor_id":"u3-edited"');
  writeFileSync(first ?? '', gzipSync(changed));
  const edited = await verify();
  expect(edited.code).toBe(1);
  expect(JSON.parse(edited.stdout).failures.join('\n')).toMatch(/does not hash to its receipt/);
  writeFileSync(first ?? '', original);

  // An object deleted from the middle leaves a gap; the last one deleted, the delivery falls short of the checkpoint.
  const all = files(dir);
  expect(all.length).toBeGreaterThanOrEqual(3);
  const last = all.at(-1) ?? '';
  const lastBytes = readFileSync(last);
  rmSync(last);
  const truncated = await verify();
  expect(truncated.code).toBe(1);
  expect(JSON.parse(truncated.stdout).failures.join('\n')).toMatch(/stops before the given checkpoint/);
  writeFileSync(last, lastBytes);
  expect((await verify()).code).toBe(0);
  rmSync(second ?? '');
  const deleted = await verify();
  expect(deleted.code).toBe(1);
  expect(JSON.parse(deleted.stdout).failures.join('\n')).toMatch(/never delivered/);
});
