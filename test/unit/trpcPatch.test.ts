/**
 * patches/@trpc+server+11.25.2.patch copies each middleware's options and context with Object.assign
 * where tRPC's spread helper copied them key by key: the same objects come out, which these calls of a
 * bare tRPC (no service) pin where the helper's own rules differ from Object.assign's.
 */
import { initTRPC } from '@trpc/server';

const t = initTRPC.context<Record<string | symbol, unknown>>().create();
const seen = t.procedure
  .use(({ next }) => next({ ctx: { added: 1 } }))
  .query(({ ctx }) => ({ keys: Object.keys(ctx), proto: Object.getPrototypeOf(ctx) === Object.prototype, ctx }));
const caller = t.createCallerFactory(t.router({ seen }));

test('a context of null or undefined is copied as {} (the helper\'s rule), with what a middleware adds', async () => {
  for (const ctx of [undefined, null]) {
    // Neither is a context tRPC's types allow; callers in JavaScript can still give one.
    expect(await caller(ctx as unknown as Record<string, unknown>).seen()).toEqual({ keys: ['added'], proto: true, ctx: { added: 1 } });
  }
});

test('a context with its own "__proto__" key keeps it as a key, and the copy its prototype', async () => {
  const ctx = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>;
  const out = await caller(ctx).seen();
  expect(out.keys).toEqual(['__proto__', 'a', 'added']);
  expect(out.proto).toBe(true);
  expect((out.ctx as { polluted?: unknown }).polluted).toBeUndefined();
});

test('a context\'s keys, symbols and values are copied in order, the added key last', async () => {
  const symbol = Symbol('s');
  const out = await caller({ b: 2, a: 1, [symbol]: 3 }).seen();
  expect(out.keys).toEqual(['b', 'a', 'added']);
  expect((out.ctx as Record<symbol, unknown>)[symbol]).toBe(3);
});
