/**
 * The query-shape check that every suite's app runs on close (helpers/harness.ts): it must tell served
 * queries from unserved ones, or its silence would prove nothing.
 */
import type { CommandStartedEvent } from 'mongodb';
import { queryShapeProblem, queryShapesOf } from '../helpers/queryShapes';

function find(collection: string, filter: object, sort?: object): CommandStartedEvent {
  return { commandName: 'find', command: { find: collection, filter, sort } } as unknown as CommandStartedEvent;
}

function problem(event: CommandStartedEvent): string | null {
  const shapes = queryShapesOf(event);
  if (shapes.length !== 1) throw new Error(`not one checked query: ${shapes.length}`);
  return queryShapeProblem(shapes[0] as Parameters<typeof queryShapeProblem>[0]);
}

function write(kind: 'update' | 'delete', collection: string, ...filters: object[]): CommandStartedEvent {
  const command = kind === 'update' ? { update: collection, updates: filters.map((q) => ({ q, u: { $set: { x: 1 } } })) } : { delete: collection, deletes: filters.map((q) => ({ q, limit: 0 })) };
  return { commandName: kind, command } as unknown as CommandStartedEvent;
}

test('queries the service makes are served', () => {
  const keyset = { $or: [{ ts: { $lt: new Date() } }, { ts: new Date(), _id: { $lt: 'x' } }] };
  expect(problem(find('events', { tenant: 'o', ...keyset }, { ts: -1, _id: -1 }))).toBeNull();
  expect(problem(find('events', { tenant: 'o', actor_id: 'a', action: 'b', ts: { $gte: new Date() } }, { ts: -1, _id: -1 }))).toBeNull();
  expect(problem(find('events', { tenant: 'o' }, { seq: -1 }))).toBeNull();
  expect(problem(find('events', { _id: 'id', tenant: 'o' }))).toBeNull();
  expect(problem(find('api_keys', { _id: { $in: ['h'] }, revoked_at: null }))).toBeNull();
  expect(problem({ commandName: 'aggregate', command: { aggregate: 'events', pipeline: [{ $match: { tenant: 'o', received_at: { $gte: new Date() } } }, { $group: {} }] } } as unknown as CommandStartedEvent)).toBeNull();
});

test('queries that would scan, sort in memory or cross tenants are named', () => {
  expect(problem(find('events', { actor_id: 'a' }))).toMatch(/does not name the tenant/);
  expect(problem(find('events', { tenant: 'o' }, { actor_name: 1 }))).toMatch(/served by no declared index/);
  expect(problem(find('events', { tenant: 'o' }, { ts: -1, _id: 1 }))).toMatch(/served by no declared index/);
  expect(problem(find('sessions', { created_at: new Date() }))).toMatch(/served by no declared index/);
  expect(queryShapesOf(find('organizations', {}))).toEqual([]);
});

test('updates and deletes are checked by their filters, and a sweep by a range on an index\'s first field is served', () => {
  expect(problem(write('delete', 'sessions', { expires_at: { $lte: new Date() } }))).toBeNull();
  expect(problem(write('update', 'api_keys', { key_id: 'k', org_id: 'o', revoked_at: null }))).toBeNull();
  expect(problem(write('delete', 'ledger_tiles', { tenant: 'o', tile: 'o/0/1', width: { $lt: 256 } }))).toBeNull();
  expect(problem(write('delete', 'sessions', { created_at: new Date() }))).toMatch(/delete on sessions .* served by no declared index/);
  expect(problem(write('update', 'api_keys', { name: 'backend' }))).toMatch(/update on api_keys .* served by no declared index/);
  // A range on a field an index holds second does not bound a walk of it.
  expect(problem(write('delete', 'auth_attempts', { at: { $lte: new Date() } }))).toBeNull();
  expect(problem(write('delete', 'ledger_tiles', { tile: { $gt: 'o/' } }))).toMatch(/served by no declared index/);
  expect(problem(find('sessions', { expires_at: { $lte: new Date() } }, { account_id: 1 }))).toMatch(/served by no declared index/);
  // Every filter of a multi-statement command is checked.
  const both = queryShapesOf(write('delete', 'sessions', { _id: 's' }, { created_at: new Date() })).map(queryShapeProblem);
  expect(both).toEqual([null, expect.stringMatching(/served by no declared index/)]);
});
