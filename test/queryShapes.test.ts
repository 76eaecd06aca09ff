/**
 * The query-shape check that every suite's app runs on close (helpers/harness.ts): it must tell served
 * queries from unserved ones, or its silence would prove nothing.
 */
import type { CommandStartedEvent } from 'mongodb';
import { queryShapeOf, queryShapeProblem } from './helpers/queryShapes';

function find(collection: string, filter: object, sort?: object): CommandStartedEvent {
  return { commandName: 'find', command: { find: collection, filter, sort } } as unknown as CommandStartedEvent;
}

function problem(event: CommandStartedEvent): string | null {
  const shape = queryShapeOf(event);
  if (!shape) throw new Error('not a checked query');
  return queryShapeProblem(shape);
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
  expect(problem(find('sessions', { account_id: 'a' }))).toMatch(/served by no declared index/);
  expect(queryShapeOf(find('organizations', {}))).toBeNull();
});
