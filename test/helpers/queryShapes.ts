/**
 * Every query the service sends must be one an index serves, on MongoDB (FerretDB uses no index for
 * reads, so its speed proves nothing): checked on the commands the driver really sends (command
 * monitoring), against the indexes the service declares, under MongoDB's equality-sort-range rule.
 * A query is served when some index starts with equality fields of its filter, the tenant first for
 * events, and continues with its sort keys (all in the index's directions or all reversed) or, without
 * a sort, with a range field: then no in-memory sort and no collection scan is needed.
 */
import type { CommandStartedEvent, Document, IndexDescription } from 'mongodb';
import { DECLARED_INDEXES } from '../../src/db/database';

/** The collections whose queries are checked, and the field that must be in every events query. */
const CHECKED = new Set(['events', 'api_keys', 'sessions', 'idempotency_keys', 'ledger_tiles', 'ledger_checkpoints']);
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

/** The query a command makes, if it is a read on a checked collection. */
export function queryShapeOf(event: CommandStartedEvent): QueryShape | null {
  const { commandName, command } = event;
  const collection = typeof command[commandName] === 'string' ? (command[commandName]) : '';
  if (!CHECKED.has(collection)) return null;
  if (commandName === 'find') return { collection, command: commandName, filter: (command.filter as Document | undefined) ?? {}, sort: sortKeys(command.sort) };
  if (commandName === 'count') return { collection, command: commandName, filter: (command.query as Document | undefined) ?? {}, sort: [] };
  if (commandName === 'aggregate') {
    const first = (command.pipeline as Document[])[0];
    return { collection, command: commandName, filter: (first?.$match as Document | undefined) ?? {}, sort: [] };
  }
  return null;
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
  if (i === 0) return false;
  const { sort } = query;
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
