/**
 * A third party's TypeScript program: it talks to Audit Ledger only through openapi-fetch, typed by
 * the `paths` that openapi-typescript generates from the published openapi.json (`./schema`), as an
 * outside developer would. It creates an event and a batch, lists them back a few at a time following
 * next_cursor until has_more is false, and exports them as JSON and as CSV, checking at each step that
 * exactly what it created comes back. It exits 1 with the reason on stderr at the first thing that is
 * not so, and prints a JSON summary on success.
 *
 *   AUDIT_LEDGER_URL=http://127.0.0.1:3000 AUDIT_LEDGER_API_KEY=alk_… tsx program.ts
 *
 * test/client/thirdPartyGenerators.test.ts copies it beside a `schema.ts` that openapi-typescript has
 * just generated, type-checks the two with a tsconfig of their own and runs it. (In the repository,
 * `./schema` re-exports the client package's copy of the same generator's output, only so that the
 * repository's own tsc and eslint read this file too.)
 */
import { randomBytes } from 'node:crypto';
import createClient from 'openapi-fetch';
import type { components, paths } from './schema';

type Event = components['schemas']['Event'];
type RemovedEvent = components['schemas']['RemovedEvent'];

const BATCH_SIZE = 4;
const PAGE_LIMIT = 2;
/** The CSV export's columns, as the operation's description in openapi.json lists them. */
const CSV_COLUMNS = ['id', 'timestamp', 'actor_id', 'actor_name', 'action', 'resource_type', 'resource_id', 'resource_name', 'organization_id'];

class Failed extends Error {}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Failed(message);
}

function isEvent(event: Event | RemovedEvent): event is Event {
  return !('removed' in event);
}

/** Fails unless `got` holds each created id exactly once and nothing else. */
function sameIds(what: string, created: readonly string[], got: readonly string[]): void {
  const want = [...created].sort();
  const have = [...got].sort();
  check(want.length === have.length && want.every((id, i) => id === have[i]), `${what}: got ids ${JSON.stringify(got)}, created ${JSON.stringify(created)}`);
}

/** RFC 4180: quoted fields may hold commas, quotes (doubled) and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field); rows.push(row); row = []; field = '';
    } else field += c;
  }
  if (field !== '' || row.length > 0) { row.push(field); rows.push(row); }
  return rows;
}

async function main(): Promise<Record<string, unknown>> {
  const base = process.env.AUDIT_LEDGER_URL;
  const key = process.env.AUDIT_LEDGER_API_KEY;
  if (!base || !key) throw new Failed('set AUDIT_LEDGER_URL and AUDIT_LEDGER_API_KEY');
  // The document's servers entry is the relative "/v1". JSON answers only: the CSV export is read as text.
  const client = createClient<paths, 'application/json'>({ baseUrl: `${base.replace(/\/$/, '')}/v1`, headers: { Authorization: `Bearer ${key}` } });
  // This run's events are told from any others by their actor.
  const actor = `openapi-fetch-${randomBytes(8).toString('hex')}`;
  const created: string[] = [];

  // One event.
  const single = await client.POST('/events', {
    body: { actor: { id: actor, name: 'TS Client' }, action: 'invoice.created', resource: { type: 'invoice', id: 'inv_0' }, metadata: { amount: 12.5, via: 'openapi-fetch' } },
  });
  check(single.data !== undefined, `POST /events: ${String(single.response.status)} ${JSON.stringify(single.error)}`);
  const { event, ledger } = single.data;
  check(isEvent(event) && !('removed' in ledger), `POST /events answered a removed event: ${JSON.stringify(single.data)}`);
  check(event.actor_id === actor && event.actor_name === 'TS Client' && event.resource_id === 'inv_0' && event.metadata.via === 'openapi-fetch', `POST /events answered another event: ${JSON.stringify(event)}`);
  check(ledger.seq >= 1 && ledger.leaf_index === ledger.seq - 1 && ledger.event_sha256.length === 64, `POST /events: receipt ${JSON.stringify(ledger)}`);
  created.push(event.id);

  // A body the generated types refuse (the type check fails if they stop refusing it), and so does the server.
  // @ts-expect-error -- resource.id is required
  const refused = await client.POST('/events', { body: { actor: { id: actor }, action: 'invoice.created', resource: { type: 'invoice' } } });
  check(refused.response.status === 400 && refused.error !== undefined && refused.error.message !== '', `POST /events without resource.id: ${String(refused.response.status)}`);

  // A batch, with an Idempotency-Key header.
  const batch = await client.POST('/events/batch', {
    params: { header: { 'Idempotency-Key': `openapi-fetch-batch-${randomBytes(8).toString('hex')}` } },
    body: { events: Array.from({ length: BATCH_SIZE }, (_, i) => ({ actor: { id: actor }, action: 'invoice.paid', resource: { type: 'invoice', id: `inv_${String(i + 1)}` } })) },
  });
  check(batch.data !== undefined, `POST /events/batch: ${String(batch.response.status)} ${JSON.stringify(batch.error)}`);
  check(batch.data.events.length === BATCH_SIZE && batch.data.ledger.length === BATCH_SIZE, `POST /events/batch: ${JSON.stringify(batch.data)}`);
  batch.data.events.forEach((stored, i) => {
    const receipt = batch.data.ledger[i];
    check(isEvent(stored) && stored.resource_id === `inv_${String(i + 1)}`, `POST /events/batch: events[${String(i)}] is not what was sent: ${JSON.stringify(stored)}`);
    check(receipt !== undefined && !('removed' in receipt) && receipt.leaf_index === receipt.seq - 1, `POST /events/batch: ledger[${String(i)}]: ${JSON.stringify(receipt)}`);
    created.push(stored.id);
  });

  // Every page, PAGE_LIMIT events at a time, following next_cursor until has_more is false.
  const listed: Event[] = [];
  let cursor: string | undefined;
  let pages = 0;
  for (;;) {
    pages++;
    check(pages <= 10 * created.length, `GET /events: still has_more after ${String(pages)} pages`);
    const page = await client.GET('/events', { params: { query: { actor_id: actor, limit: PAGE_LIMIT, cursor } } });
    check(page.data !== undefined, `GET /events (page ${String(pages)}): ${String(page.response.status)} ${JSON.stringify(page.error)}`);
    check(page.data.data.length <= PAGE_LIMIT, `GET /events: ${String(page.data.data.length)} events on a page of limit ${String(PAGE_LIMIT)}`);
    listed.push(...page.data.data);
    if (!page.data.has_more) break;
    check(page.data.next_cursor !== null, 'GET /events: has_more with no next_cursor');
    cursor = page.data.next_cursor;
  }
  // Newest first: (timestamp, id) strictly decreasing, so no event twice.
  listed.forEach((b, i) => {
    const a = i > 0 ? listed[i - 1] : undefined;
    check(a === undefined || a.timestamp > b.timestamp || (a.timestamp === b.timestamp && a.id > b.id), `GET /events: ${a?.id ?? ''} listed before ${b.id}`);
  });
  sameIds('GET /events', created, listed.map((e) => e.id));

  // The JSON export.
  const exported = await client.GET('/events/export', { params: { query: { actor_id: actor, format: 'json' } } });
  check(exported.data !== undefined, `GET /events/export (json): ${String(exported.response.status)} ${JSON.stringify(exported.error)}`);
  sameIds('GET /events/export (json)', created, exported.data.map((e) => e.id));

  // The CSV export, read as text.
  const csv = await client.GET('/events/export', { params: { query: { actor_id: actor, format: 'csv' } }, parseAs: 'text' });
  check(csv.data !== undefined && (csv.response.headers.get('content-type') ?? '').startsWith('text/csv'), `GET /events/export (csv): ${String(csv.response.status)} ${csv.response.headers.get('content-type') ?? ''}`);
  const [header, ...rows] = parseCsv(csv.data);
  check(JSON.stringify(header) === JSON.stringify(CSV_COLUMNS), `GET /events/export (csv): header ${JSON.stringify(header)}`);
  check(rows.every((row) => row[2] === actor), `GET /events/export (csv): another actor's row in ${csv.data}`);
  sameIds('GET /events/export (csv)', created, rows.map((row) => row[0] ?? ''));

  return { created, pages, export_json: exported.data.length, export_csv: rows.length };
}

main().then((summary) => {
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}, (error: unknown) => {
  process.stderr.write(`openapi-fetch program: ${error instanceof Failed ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
