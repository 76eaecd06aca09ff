/**
 * The producer-signature rules every TypeScript verifier applies (domain/producerSignature.ts), on
 * events made here: whatever the order of binding and events, a bound key's events need a valid
 * signature by its one producer key; the service's own records need none; a signature no binding
 * explains fails over a whole log and is only counted over part of one.
 */
import { sign } from 'node:crypto';
import { signerFromSeed } from '../../src/domain/ledger/note';
import { type CheckedEvent, producerMessage, ProducerSignatureCheck, signedContentOf } from '../../src/domain/producerSignature';

const producer = signerFromSeed('producer.example', Buffer.alloc(32, 1));
const stranger = signerFromSeed('stranger.example', Buffer.alloc(32, 2));
let n = 0;

function event(keyId: string, signer: typeof producer | null, overrides: Record<string, unknown> = {}): CheckedEvent {
  const body = { actor: { id: 'u1' }, action: 'invoice.paid', resource: { type: 'invoice', id: 'i1' }, timestamp: '2026-01-01T00:00:00.000Z', ...overrides };
  const content = signedContentOf(body, 'org_1');
  const signature = signer ? sign(null, Buffer.from(producerMessage(content)), signer.privateKey).toString('base64') : undefined;
  return { ...content, id: `e${++n}`, api_key_id: keyId, ...(signature ? { producer_signature: signature } : {}) } as CheckedEvent;
}
const binding = (keyId: string, key: string): CheckedEvent => ({ id: `b${++n}`, api_key_id: 'audit_ledger', action: 'audit_ledger.key.producer_bound', resource_id: keyId, metadata: { producer_key: key } });

async function run(events: CheckedEvent[], complete = true) {
  const check = new ProducerSignatureCheck();
  for (const e of events) await check.add(e);
  return { ...check.finish(complete), signed: check.signed };
}

test('signed events of a bound key pass, before or after the binding in the order given', async () => {
  const before = await run([event('key_a', producer), binding('key_a', producer.text), event('key_a', producer), event('key_b', null)]);
  expect(before).toEqual({ failures: [], unchecked: 0, bound: 1, signed: 2 });
});

test('an unsigned, changed or strangely signed event of a bound key fails, named, wherever it stands', async () => {
  const unsignedFirst = event('key_a', null);
  const changed = { ...event('key_a', producer), action: 'invoice.refunded' };
  const stranger1 = event('key_a', stranger);
  const { failures } = await run([unsignedFirst, binding('key_a', producer.text), changed, stranger1, event('key_a', null, { action: 'x.y' })]);
  expect(failures).toHaveLength(4);
  expect(failures[0]).toBe(`1 event(s) of API key key_a, bound to producer key ${producer.text}, carry no producer signature: ${unsignedFirst.id}`);
  expect(failures[1]).toContain(`event ${changed.id}: its producer signature does not verify`);
  expect(failures[2]).toContain(`event ${stranger1.id}: its producer signature does not verify`);
  expect(failures[3]).toContain('carries no producer signature');
});

test('the service\'s own records of a bound key need no signature; a second, different binding fails', async () => {
  const own = { ...event('key_a', null), action: 'audit_ledger.export.run' };
  const { failures } = await run([binding('key_a', producer.text), own, binding('key_a', producer.text), binding('key_a', stranger.text)]);
  expect(failures).toEqual([`API key key_a is bound to two producer keys: ${producer.text} and ${stranger.text} (binding entry ${n})`.replace(` ${n})`, ` b${n})`)]);
});

test('a signature no binding explains fails over the whole log, and is only counted over part of it', async () => {
  const signed = event('key_c', producer);
  expect((await run([signed])).failures).toEqual([`1 event(s) of API key key_c carry a producer signature, but the log binds no producer key to it: ${signed.id}`]);
  expect(await run([signed], false)).toEqual({ failures: [], unchecked: 1, bound: 0, signed: 0 });
});

test('a pinned binding the log contradicts fails; one it agrees with verifies', async () => {
  const pinned = new ProducerSignatureCheck(new Map([['key_a', stranger.text]]));
  await pinned.add(binding('key_a', producer.text));
  await pinned.add(event('key_a', producer));
  expect(pinned.finish(true).failures[0]).toContain('is bound to two producer keys');
});

test('only the service\'s exact records are exempt: another action of its namespace under a bound key needs a signature like any', async () => {
  const lookalike = { ...event('key_a', null), action: 'Audit_Ledger.invoice.refunded' };
  const { failures } = await run([binding('key_a', producer.text), lookalike]);
  expect(failures).toEqual([`event ${lookalike.id} of API key key_a, bound to producer key ${producer.text}, carries no producer signature`]);
});

test('over part of a log, events of keys bound nowhere in view are counted unchecked, signed or not', async () => {
  expect(await run([event('key_x', null), event('key_x', producer), event('key_y', null)], false)).toEqual({ failures: [], unchecked: 3, bound: 0, signed: 0 });
});
