/**
 * Every query the service sends must be one an index serves, on MongoDB (FerretDB uses no index for
 * reads, so its speed proves nothing): checked on the commands the driver really sends (command
 * monitoring), reads and the filters of updates and deletes alike, against the indexes the service
 * declares, under MongoDB's equality-sort-range rule. A query is served when some index starts with
 * equality fields of its filter, the tenant first for events, and continues with its sort keys (all in
 * the index's directions or all reversed); or, without a sort, when an index starts with equality
 * fields or with a range field of the filter (a sweep of expired documents): then no in-memory sort
 * and no collection scan is needed.
 */
import type { CommandStartedEvent, Document, IndexDescription } from 'mongodb';
import { DECLARED_INDEXES } from '../../src/db/database';

/** The collections whose queries are checked, and the field that must be in every events query. */
const CHECKED = new Set(['events', 'api_keys', 'api_key_uses', 'accounts', 'sessions', 'auth_attempts', 'idempotency_keys', 'ledger_tiles', 'ledger_checkpoints', 'ledger_heads']);
const TENANT_FIELD: Record<string, string> = { events: 'tenant' };

export interface QueryShape {
  collection: string;
  command: string;
  filter: Document;
  /** The sort keys in order, with their directions. */
  sort: [string, number][];
}

/** The driver sends a sort as a Map (its keys' order matters); tests may write an object. */
function sortKeys(sort: unknown): [string, number][] {
  if (sort instanceof Map) return [...(sort as Map<string, number>).entries()];
  return typeof sort === 'object' && sort !== null ? (Object.entries(sort) as [string, number][]) : [];
}

/** The queries a command makes on a checked collection: a read's, or the filter of each update or delete in it. */
export function queryShapesOf(event: CommandStartedEvent): QueryShape[] {
  const { commandName, command } = event;
  const collection = typeof command[commandName] === 'string' ? (command[commandName]) : '';
  if (!CHECKED.has(collection)) return [];
  const shape = (filter: unknown, sort?: unknown): QueryShape => ({ collection, command: commandName, filter: (filter as Document | undefined) ?? {}, sort: sortKeys(sort) });
  switch (commandName) {
    case 'find':
      return [shape(command.filter, command.sort)];
    case 'count':
      return [shape(command.query)];
    case 'aggregate':
      return [shape((command.pipeline as Document[])[0]?.$match)];
    case 'findAndModify':
      return [shape(command.query, command.sort)];
    case 'update':
      return (command.updates as Document[]).map((update) => shape(update.q));
    case 'delete':
      return (command.deletes as Document[]).map((del) => shape(del.q));
    default:
      return [];
  }
}

/**
 * The fields a filter pins to one value (a value, `null`, `$eq`, or `$in`'s few). Range conditions
 * (`$gt`…, a keyset `$or`) narrow a walk along an index but never let it start: only equality does.
 */
function equalityFieldsOf(filter: Document): Set<string> {
  const equality = new Set<string>();
  for (const [field, value] of Object.entries(filter)) {
    if (field.startsWith('$')) continue;
    const operators = typeof value === 'object' && value !== null && !(value instanceof Date) ? Object.keys(value as Document) : [];
    if (operators.every((op) => op === '$eq' || op === '$in')) equality.add(field);
  }
  return equality;
}

/** Whether `index` serves the query without a collection scan and without an in-memory sort. */
function serves(index: IndexDescription, query: QueryShape): boolean {
  const keys = Object.entries(index.key) as [string, number][];
  const equality = equalityFieldsOf(query.filter);
  let i = 0;
  while (i < keys.length && equality.has((keys[i] as [string, number])[0])) i++;
  const { sort } = query;
  // Without equality, only a range on the index's first field bounds the walk (`expires_at ≤ now`).
  if (i === 0) return sort.length === 0 && keys.length > 0 && (keys[0] as [string, number])[0] in query.filter;
  if (sort.length === 0) return true;
  // The keys right after the equality prefix must be the sort, in the index's order or fully reversed.
  const spell = (pairs: [string, number][], sign: number) => pairs.map(([field, dir]) => `${field}:${dir * sign}`).join(',');
  const next = spell(keys.slice(i, i + sort.length), 1);
  return next === spell(sort, 1) || next === spell(sort, -1);
}

/** What is wrong with a query, or null when a declared index serves it. */
export function queryShapeProblem(query: QueryShape): string | null {
  const tenant = TENANT_FIELD[query.collection];
  if (tenant && !equalityFieldsOf(query.filter).has(tenant)) return `${describe(query)} does not name the ${tenant}`;
  const indexes: IndexDescription[] = [{ key: { _id: 1 }, name: '_id_' }, ...(DECLARED_INDEXES[query.collection] ?? [])];
  return indexes.some((index) => serves(index, query)) ? null : `${describe(query)} is served by no declared index (equality, then sort, then range)`;
}

function describe(query: QueryShape): string {
  const shape = (doc: Document | undefined) => JSON.stringify(doc, (_key, value: unknown) => (typeof value === 'object' && value !== null ? value : '·'));
  const sort = query.sort.map(([field, dir]) => `${field}:${dir}`).join(',');
  return `${query.command} on ${query.collection} ${shape(query.filter)}${sort ? ` sort ${sort}` : ''}`;
}
