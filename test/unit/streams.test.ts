/** The pure parts of log streams: send places, backoff, private addresses, Retry-After, OCSF activities, S3 keys. */
import { backoffMs, SendSlots } from '../../src/streams/deliverer';
import { isPrivateAddress, retryAfterMs } from '../../src/streams/outboundHttp';
import { ocsfActivity } from '../../src/domain/streamFormats';
import { objectKey } from '../../src/streams/destinations/s3';
import { splitSecrets } from '../../src/domain/stream';

test('send places: at most the size in all and the per-organization share, the others served in order', async () => {
  const slots = new SendSlots(3, 2);
  const granted: string[] = [];
  const take = (tenant: string) => slots.take(tenant).then(() => granted.push(tenant));
  await take('a');
  await take('a');
  const third = take('a');
  const other = take('b');
  await Promise.resolve();
  await other;
  expect(granted).toEqual(['a', 'a', 'b']);
  const fourth = take('c');
  slots.give('a');
  await third;
  expect(granted).toEqual(['a', 'a', 'b', 'a']);
  slots.give('b');
  await fourth;
  expect(granted).toEqual(['a', 'a', 'b', 'a', 'c']);
});

test('backoff grows exponentially to the cap, with jitter in its upper half', () => {
  expect(backoffMs(1, 60_000, () => 0)).toBe(500);
  expect(backoffMs(1, 60_000, () => 1)).toBe(1000);
  expect(backoffMs(4, 60_000, () => 1)).toBe(8000);
  expect(backoffMs(40, 60_000, () => 1)).toBe(60_000);
  expect(backoffMs(40, 60_000, () => 0)).toBe(30_000);
});

test('private, loopback and link-local addresses are told apart from public ones', () => {
  for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '::1', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '0.0.0.0', '100.64.0.1']) expect({ a, p: isPrivateAddress(a) }).toEqual({ a, p: true });
  for (const a of ['8.8.8.8', '2606:4700::1111', '::ffff:1.1.1.1']) expect({ a, p: isPrivateAddress(a) }).toEqual({ a, p: false });
});

test('Retry-After in seconds or as an HTTP date', () => {
  expect(retryAfterMs('7')).toBe(7000);
  expect(retryAfterMs('Wed, 25 Nov 2026 12:00:10 GMT', Date.parse('2026-11-25T12:00:00Z'))).toBe(10_000);
  expect(retryAfterMs('soon')).toBeNull();
  expect(retryAfterMs(undefined)).toBeNull();
});

test('OCSF activities from the action\'s last word', () => {
  expect(ocsfActivity('invoice.created')).toEqual({ id: 1, name: 'Create' });
  expect(ocsfActivity('report.exported')).toEqual({ id: 2, name: 'Read' });
  expect(ocsfActivity('user.role_changed')).toEqual({ id: 3, name: 'Update' });
  expect(ocsfActivity('user.signed_in')).toEqual({ id: 99, name: 'Other' });
  expect(ocsfActivity('user.updated')).toEqual({ id: 3, name: 'Update' });
  expect(ocsfActivity('key.revoked')).toEqual({ id: 4, name: 'Delete' });
  expect(ocsfActivity('login')).toEqual({ id: 99, name: 'Other' });
});

test('S3 keys sort by sequence within a day, under the prefix and the organization', () => {
  const batch = (first: number, last: number) => ({ streamId: 's', tenant: 'org_1', first, last, items: [], times: [], receivedAt: new Date('2026-11-25T23:59:59Z'), checkpoint: null });
  expect(objectKey('audit/', batch(1, 500))).toBe('audit/org_1/2026/11/25/000000000001-000000000500.jsonl.gz');
  const keys = [batch(9, 10), batch(1001, 2000), batch(11, 1000)].map((b) => objectKey('', b));
  expect([...keys].sort()).toEqual([keys[0], keys[2], keys[1]]);
});

test('secrets are split from what may be shown', () => {
  expect(splitSecrets({ type: 's3', region: 'us-east-1', bucket: 'b', access_key_id: 'AK', secret_access_key: 'SK' })).toEqual({
    destination: { type: 's3', region: 'us-east-1', bucket: 'b', access_key_id: 'AK' },
    secrets: { secret_access_key: 'SK' },
  });
});
