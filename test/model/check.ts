/**
 * The promises, checked against the model after every step (issue 34):
 * - every acknowledged event is readable (GET through every running instance, every list page, the
 *   JSON export) with the content it was acknowledged with, unless lawfully removed;
 * - a removed event's content is never returned anywhere (GET, list, export, stream, replay), nor kept
 *   in the database; a refused body is never stored;
 * - sequence numbers are gapless (each holds its event or, once removed, its tombstone; a service
 *   without tombstones may leave a number empty only where its own prune or erasure entry covers it)
 *   and never change hands;
 * - the list page and the export say how many events were pruned and erased;
 * - a row planted behind the service's back (commands.ts, PlantForeign) is never returned (its id or
 *   content: GET answers 404, no list page, export, stream delivery or replay holds it), never takes a
 *   number a genuine event held, never counts as one for the gapless sequence (genuine rows are gapless
 *   around it), and stays in `events` as planted until the service moves it aside into `foreign_rows`;
 *   the other organization (copies between organizations) is held to the same;
 * and, being slower (three command-line processes each), after every step where the log's promises are
 * at stake (commands.ts, `atStake`: removals, replays, restarts, a second writer, a reseal; every step
 * with MODEL_CHECKS=every) and at the end of each run:
 * - `export --with-proofs` + `verify` with the pinned key pass and report the removals, `--state` across
 *   the run catching any rewrite between two exports;
 * - `ledger audit` finds nothing but the planted rows still in `events` (each named, kind `foreign`) and
 *   counts the removals (a forged erasure entry counting for nothing); no planted row has a proof;
 * - a stream from sequence number 1 delivered every present event, and no removed event's content once
 *   its removal was answered.
 * Each check collects every problem it sees; a step fails with all of them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { type Model, type ModelEvent, plantedIds, type PlantedRow, presentEvents, removedCount, removedEvents } from './model';
import { type Arrival, type SlotDoc, type System, VERIFIER_KEY } from './system';
import { stepLog } from './log';
import { eventually, TimedOut } from '../helpers/waiting';

/** How long a stream may still deliver an event after its removal was answered (a batch read just before). */
const STREAM_GRACE_MS = 3_000;
/** Requests sent at once for the point reads. */
const PARALLEL = 8;

/**
 * MODEL_IGNORE: a regular expression; problems it matches are logged (MODEL_LOG) and not failed on, to
 * look past a known bug that every run would otherwise stop at (an export cut short hides the rest).
 */
const ignored = process.env.MODEL_IGNORE ? new RegExp(process.env.MODEL_IGNORE) : null;

class Problems {
  readonly list: string[] = [];
  add(problem: string): void {
    if (ignored?.test(problem)) stepLog(`    ignored: ${problem}`);
    else if (!this.list.includes(problem)) this.list.push(problem);
  }
  throwIfAny(what: string): void {
    if (this.list.length === 0) return;
    const shown = this.list.slice(0, 25);
    throw new Error(`${what}: ${this.list.length} promise(s) broken:\n  - ${shown.join('\n  - ')}${this.list.length > shown.length ? `\n  … and ${this.list.length - shown.length} more` : ''}`);
  }
}

/** What is different between an event as returned and as the model acknowledged it; null: the same. */
export function contentDifference(returned: Record<string, unknown> | undefined, event: ModelEvent): string | null {
  if (!returned) return 'absent';
  const expected: Record<string, unknown> = {
    id: event.id,
    timestamp: new Date(event.receivedAt).toISOString(),
    actor_id: event.body.actor.id,
    actor_name: event.body.actor.name,
    actor_email: event.body.actor.email,
    action: event.body.action,
    resource_type: event.body.resource.type,
    resource_id: event.body.resource.id,
    resource_name: event.body.resource.name,
    metadata: event.body.metadata,
  };
  for (const [field, value] of Object.entries(expected)) {
    if (!isDeepStrictEqual(returned[field], value)) return `${field} is ${JSON.stringify(returned[field])}, acknowledged as ${JSON.stringify(value)}`;
  }
  // A producer's signature is shown exactly as sent, and no other event has one.
  if (returned.producer_signature !== event.body.producer_signature) return `producer_signature is ${JSON.stringify(returned.producer_signature)}, sent as ${JSON.stringify(event.body.producer_signature)}`;
  return null;
}

const named = (e: ModelEvent) => `event ${e.id} (seq ${e.seq}, ${e.actor}, ${e.action}${e.removed ? `, ${e.removed.kind}` : ''})`;

/**
 * Events returned by a list or an export: exactly the present events, each as acknowledged, besides the
 * service's own records (`audit_ledger.*`), and nothing of a removed event or a refused body.
 */
function checkReturned(m: Model, problems: Problems, where: string, returned: Record<string, unknown>[], text: string): void {
  checkNoPlanted(m, 'model', problems, where, returned.map((item) => String(item.id)), text);
  const seen = new Set<string>();
  for (const item of returned) {
    const id = String(item.id);
    if (seen.has(id)) problems.add(`${where} returns event ${id} twice`);
    seen.add(id);
    const event = m.byId.get(id);
    if (!event) {
      if (!String(item.action).startsWith('audit_ledger.')) problems.add(`${where} returns event ${id} (${String(item.action)}, actor ${String(item.actor_id)}), which was never acknowledged`);
      continue;
    }
    if (event.removed) {
      problems.add(`${where} returns the removed ${named(event)}`);
      continue;
    }
    const difference = contentDifference(item, event);
    if (difference) problems.add(`${where} returns ${named(event)} changed: ${difference}`);
  }
  for (const event of presentEvents(m)) if (!seen.has(event.id)) problems.add(`${where} lacks the acknowledged ${named(event)}`);
  for (const event of removedEvents(m)) if (text.includes(event.marker)) problems.add(`${where} holds the content of the removed ${named(event)}`);
  for (const marker of m.neverStored) if (text.includes(marker)) problems.add(`${where} holds the content of a refused body (${marker})`);
}

const plantedName = (p: PlantedRow) => `the planted row ${p.id} (${p.variant}, seq ${p.seq})`;

/** No planted row of organization `org` among `ids`, nor its content (marker) in `text`. */
function checkNoPlanted(m: Model, org: PlantedRow['org'], problems: Problems, where: string, ids: readonly string[], text: string): void {
  const returned = new Set(ids);
  for (const planted of m.planted.filter((p) => p.org === org)) {
    if (returned.has(planted.id) || text.includes(planted.id)) problems.add(`${where} returns ${plantedName(planted)}`);
    else if (text.includes(planted.marker)) problems.add(`${where} holds the content of ${plantedName(planted)}`);
  }
}

/**
 * The planted rows of organization `org` among its stored `docs`: each still where it was planted, as it
 * was (its id at its number), or moved aside into `foreign_rows`; none at a number a genuine event held.
 */
async function checkPlantedRows(m: Model, s: System, org: PlantedRow['org'], docs: readonly SlotDoc[], seqIds: ReadonlyMap<number, string>, problems: Problems): Promise<void> {
  const planted = m.planted.filter((p) => p.org === org);
  if (planted.length === 0) return;
  const byId = new Map(docs.map((doc) => [doc._id, doc]));
  const aside = await s.movedAside();
  for (const row of planted) {
    const doc = byId.get(row.id);
    if (doc && doc.seq !== row.seq) problems.add(`${plantedName(row)} is now at sequence number ${doc.seq}`);
    if (!doc && !aside.has(row.id)) problems.add(`${plantedName(row)} is neither in events nor moved aside into foreign_rows`);
    const held = seqIds.get(row.seq);
    if (doc && held !== undefined) problems.add(`${plantedName(row)} holds the number of the genuine event ${held}`);
  }
}

/** The list page's `removed` (and the export's header): the counts of pruned and erased events, once any. */
function checkNotice(m: Model, problems: Problems, where: string, notice: { pruned?: unknown; erased?: unknown } | null | undefined): void {
  const erased = removedCount(m, 'erased');
  const expected = erased + m.prunedTotal === 0 ? null : { pruned: m.prunedTotal, erased };
  const actual = notice ? { pruned: notice.pruned, erased: notice.erased } : null;
  if (!isDeepStrictEqual(actual, expected)) problems.add(`${where} says removed ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
}

async function inParallel<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  for (let at = 0; at < items.length; at += PARALLEL) await Promise.all(items.slice(at, at + PARALLEL).map(work));
}

/** Sequence numbers, read from the database: gapless, each held by one event for ever, each acknowledged event at its own. */
async function checkSequence(m: Model, s: System, problems: Problems): Promise<void> {
  const all = await s.slots();
  const planted = plantedIds(m);
  // Planted rows are not the service's: they take no part in its sequence (checked apart, below).
  const docs = all.filter((doc) => !planted.has(doc._id));
  const bySeq = new Map<number, string>();
  const byId = new Map(docs.map((doc) => [doc._id, doc]));
  for (const doc of docs) {
    const other = bySeq.get(doc.seq);
    if (other !== undefined && other !== doc._id) problems.add(`sequence number ${doc.seq} is held by two documents at once: ${other} and ${doc._id}`);
    bySeq.set(doc.seq, doc._id);
  }
  // What was acknowledged counts as seen: a receipt gave the number to that event.
  for (const event of m.events) {
    const was = s.seqIds.get(event.seq);
    if (was !== undefined && was !== event.id) problems.add(`sequence number ${event.seq} was given to ${was} and again to the acknowledged ${named(event)}`);
    else s.seqIds.set(event.seq, event.id);
  }
  for (const [seq, id] of bySeq) {
    const was = s.seqIds.get(seq);
    if (was !== undefined && was !== id) {
      const earlier = m.byId.get(was);
      problems.add(`sequence number ${seq} was ${earlier ? named(earlier) : `event ${was}`}; it is now held by ${m.byId.get(id) ? named(m.byId.get(id) as ModelEvent) : `event ${id}`}`);
    } else s.seqIds.set(seq, id);
  }
  for (const event of m.events) {
    const doc = byId.get(event.id);
    if (doc && doc.seq !== event.seq) problems.add(`${named(event)} is stored at sequence number ${doc.seq}, not where its receipt put it`);
    if (!event.removed && (!doc || doc.removed !== undefined)) problems.add(`the acknowledged ${named(event)} is not in the database`);
    if (event.removed && doc && JSON.stringify(doc).includes(event.marker)) problems.add(`the database still holds the content of the removed ${named(event)}`);
  }
  // A missing number: where the service keeps tombstones (any document of the organization is one), never
  // (README, "Tombstones: one sequence, for ever"); without them, only where the service's own prune or
  // erasure entry covers it (as verify requires).
  const tombstones = docs.some((doc) => doc.removed !== undefined);
  const covered = new Set<number>();
  for (const entry of (await s.retentionEntries()).filter((e) => !planted.has(e._id))) {
    const ranges = (JSON.parse(entry.metadata) as { ranges?: string }).ranges ?? '';
    for (const range of ranges.split(',').filter(Boolean)) {
      const [from, to = from] = range.split('-').map(Number) as [number, number?];
      for (let seq = from; seq <= to; seq++) covered.add(seq);
    }
  }
  const newest = Math.max(0, ...bySeq.keys(), ...m.events.map((e) => e.seq));
  const gaps: number[] = [];
  for (let seq = 1; seq <= newest; seq++) if (!bySeq.has(seq) && (tombstones || !covered.has(seq))) gaps.push(seq);
  if (gaps.length) problems.add(`sequence numbers ${gaps.join(', ')} (of 1 to ${newest}) hold no document${tombstones ? ' (neither an event nor a tombstone)' : ', and no retention entry of the service removed them'}${planted.size ? ' (rows planted behind the service\'s back not counted)' : ''}`);
  await checkPlantedRows(m, s, 'model', all, s.seqIds, problems);
}

/** Every read through the API: GET of each event, every list page, the JSON export. */
async function checkReads(m: Model, s: System, problems: Problems): Promise<void> {
  // Point reads through every running instance: a second one must not answer from a memory of its own.
  for (const via of s.second ? (['primary', 'second'] as const) : (['primary'] as const)) {
    const where = via === 'second' ? 'GET through the second instance' : 'GET';
    await inParallel(m.events, async (event) => {
      const res = await s.api(`/v1/events/${event.id}`, { via });
      if (event.removed) {
        if (res.status !== 404) problems.add(`${where} of the removed ${named(event)} answers ${res.status}`);
        if (res.text.includes(event.marker)) problems.add(`${where} of the removed ${named(event)} returns its content`);
      } else if (res.status !== 200) problems.add(`${where} of the acknowledged ${named(event)} answers ${res.status}: ${res.text.slice(0, 200)}`);
      else {
        const difference = contentDifference(res.body, event);
        if (difference) problems.add(`${where} of ${named(event)}: ${difference}`);
      }
    });
  }

  // A planted row's id is not an event of the organization's: 404, through every instance.
  for (const via of s.second ? (['primary', 'second'] as const) : (['primary'] as const)) {
    await inParallel(m.planted.filter((p) => p.org === 'model'), async (planted) => {
      const res = await s.api(`/v1/events/${planted.id}`, { via });
      if (res.status !== 404 || res.text.includes(planted.marker)) problems.add(`GET${via === 'second' ? ' through the second instance' : ''} of ${plantedName(planted)} answers ${res.status}: ${res.text.slice(0, 200)}`);
    });
  }

  const listed: Record<string, unknown>[] = [];
  let text = '';
  let cursor: string | null = null;
  for (let page = 0; ; page++) {
    const res = await s.api(`/v1/events?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (res.status !== 200) {
      problems.add(`list page ${page + 1} answers ${res.status}: ${res.text.slice(0, 200)}`);
      return;
    }
    if (page === 0) checkNotice(m, problems, 'the list page', res.body.removed);
    listed.push(...(res.body.data as Record<string, unknown>[]));
    text += res.text;
    cursor = res.body.next_cursor as string | null;
    if (!res.body.has_more || !cursor) break;
    if (page > 500) {
      problems.add('the list pages never end');
      break;
    }
  }
  checkReturned(m, problems, 'the list', listed, text);

  const exported = await s.api('/v1/events/export?format=json');
  if (exported.status !== 200 || !Array.isArray(exported.body)) problems.add(`the JSON export answers ${exported.status}: ${exported.text.slice(0, 200)}`);
  else {
    checkReturned(m, problems, 'the JSON export', exported.body as Record<string, unknown>[], exported.text);
    const header = exported.headers.get('audit-ledger-removed-events');
    const counts = header ? Object.fromEntries(header.split(';').map((part) => part.trim().split('=')).map(([k, v]) => [k, Number(v)])) : null;
    checkNotice(m, problems, 'the export\'s Audit-Ledger-Removed-Events header', counts);
  }
}

/**
 * The other organization (made only for copies between organizations): its acknowledged events at their
 * numbers, numbers gapless and never changing hands, its planted rows where they were put or moved
 * aside, and its reads (GET, list pages, JSON export): exactly its own events, nothing planted.
 */
async function checkOther(m: Model, s: System, problems: Problems): Promise<void> {
  const other = s.other;
  if (!m.other || !other) return;
  const planted = plantedIds(m, 'other');
  const all = await s.slots(other.id);
  const docs = all.filter((doc) => !planted.has(doc._id));
  const byId = new Map(docs.map((doc) => [doc._id, doc]));
  for (const event of m.other) {
    const was = s.otherSeqIds.get(event.seq);
    if (was !== undefined && was !== event.id) problems.add(`the other organization's sequence number ${event.seq} was given to ${was} and again to its acknowledged event ${event.id}`);
    else s.otherSeqIds.set(event.seq, event.id);
    const doc = byId.get(event.id);
    if (!doc || doc.removed !== undefined || doc.seq !== event.seq) problems.add(`the other organization's acknowledged event ${event.id} (seq ${event.seq}) is ${doc ? `at ${doc.seq}${doc.removed === undefined ? '' : ', a tombstone'}` : 'not in the database'}`);
  }
  for (const doc of docs) {
    const was = s.otherSeqIds.get(doc.seq);
    if (was !== undefined && was !== doc._id) problems.add(`the other organization's sequence number ${doc.seq} was ${was}; it is now held by ${doc._id}`);
    else s.otherSeqIds.set(doc.seq, doc._id);
  }
  const seqs = new Set(docs.map((doc) => doc.seq));
  const newest = Math.max(0, ...seqs);
  const gaps: number[] = [];
  for (let seq = 1; seq <= newest; seq++) if (!seqs.has(seq)) gaps.push(seq);
  if (gaps.length) problems.add(`the other organization's sequence numbers ${gaps.join(', ')} (of 1 to ${newest}) hold no genuine document`);
  await checkPlantedRows(m, s, 'other', all, s.otherSeqIds, problems);

  await inParallel(m.planted.filter((p) => p.org === 'other'), async (row) => {
    const res = await s.api(`/v1/events/${row.id}`, { key: other.key });
    if (res.status !== 404 || res.text.includes(row.marker)) problems.add(`GET of the other organization's ${plantedName(row)} answers ${res.status}: ${res.text.slice(0, 200)}`);
  });
  const listed: string[] = [];
  let text = '';
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const res = await s.api(`/v1/events?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key: other.key });
    if (res.status !== 200) {
      problems.add(`the other organization's list page ${page + 1} answers ${res.status}: ${res.text.slice(0, 200)}`);
      return;
    }
    listed.push(...(res.body.data as Record<string, unknown>[]).filter((e) => !String(e.action).startsWith('audit_ledger.') || planted.has(String(e.id))).map((e) => String(e.id)));
    text += res.text;
    cursor = res.body.next_cursor as string | null;
    if (!res.body.has_more || !cursor) break;
  }
  checkOtherReturned(m, problems, 'the other organization\'s list', listed, text);
  const exported = await s.api('/v1/events/export?format=json', { key: other.key });
  if (exported.status !== 200 || !Array.isArray(exported.body)) problems.add(`the other organization's JSON export answers ${exported.status}: ${exported.text.slice(0, 200)}`);
  else checkOtherReturned(m, problems, 'the other organization\'s JSON export', (exported.body as Record<string, unknown>[]).filter((e) => !String(e.action).startsWith('audit_ledger.') || planted.has(String(e.id))).map((e) => String(e.id)), exported.text);
}

/** The other organization's events as returned (its own records left out): exactly its acknowledged ones, nothing planted. */
function checkOtherReturned(m: Model, problems: Problems, where: string, ids: string[], text: string): void {
  checkNoPlanted(m, 'other', problems, where, ids, text);
  const expected = new Set((m.other ?? []).map((e) => e.id));
  for (const id of ids) if (!expected.has(id)) problems.add(`${where} returns event ${id}, which was never acknowledged to it`);
  for (const id of expected) if (!ids.includes(id)) problems.add(`${where} lacks its acknowledged event ${id}`);
}

/** The cheap promises: after every step. */
export async function checkState(m: Model, s: System, step: string): Promise<void> {
  const problems = new Problems();
  await checkSequence(m, s, problems);
  await checkReads(m, s, problems);
  await checkOther(m, s, problems);
  problems.throwIfAny(`after ${step}`);
}

/** `probe`'s value once it gives one, or null after `timeoutMs`: a check reports a problem rather than throw. */
async function valueWithin<T>(probe: () => Promise<T | null>, timeoutMs: number): Promise<T | null> {
  try {
    return (await eventually('a model check', async () => { const value = await probe(); return value === null ? null : { value }; }, timeoutMs)).value;
  } catch (error) {
    if (error instanceof TimedOut) return null;
    throw error;
  }
}

/** The signed checkpoint once it covers `size` events, or what it covers after a wait. */
async function signedUpTo(s: System, size: number): Promise<{ tree_size: number; root_hash: string }> {
  const read = async () => (await s.api('/v1/ledger/checkpoint')).body as { tree_size: number; root_hash: string };
  return (await valueWithin(async () => {
    const checkpoint = await read();
    return checkpoint.tree_size >= size ? checkpoint : null;
  }, 10_000)) ?? read();
}

/** The slow promises: the ledger's verifiers and the stream. */
export async function checkLedger(m: Model, s: System, step: string): Promise<void> {
  const problems = new Problems();
  const t0 = Date.now();
  const planted = plantedIds(m);
  const newest = await s.integrate(planted);
  await checkOtherLedger(m, s, problems);
  if (newest === 0) {
    // nothing stored, nothing signed: an export has no checkpoint to pin to
    problems.throwIfAny(`after ${step} (ledger)`);
    return;
  }
  const checkpoint = await signedUpTo(s, newest);
  // Records the service wrote during the cheap checks (an export's own record) may have taken numbers since.
  await checkSequence(m, s, problems);
  const t1 = Date.now();
  if (checkpoint.tree_size < newest) {
    problems.add(`the log is signed up to ${checkpoint.tree_size} of ${newest} events${s.app.services.integrator.haltedReason(s.orgId) ? ` (HALTED: ${s.app.services.integrator.haltedReason(s.orgId)})` : ''}`);
  }
  const erased = removedCount(m, 'erased');

  s.exports += 1;
  const out = join(s.dir, `export-${s.exports}.json`);
  // Planted rows in `events` all through the audit must be named by it (the export's own record may move one aside meanwhile).
  const plantedBefore = new Set((await s.slots()).filter((doc) => planted.has(doc._id)).map((doc) => doc._id));
  const [exported, audited] = await Promise.all([
    s.cli(['export', '--url', s.app.url, '--key', s.key, '--out', out, '--with-proofs']),
    s.cli(['ledger', 'audit', '--org', s.orgId, '--verifier-key', VERIFIER_KEY, '--json']),
  ]);
  const t2 = Date.now();
  if (exported.code !== 0) problems.add(`export --with-proofs failed (${exported.code}): ${exported.stderr.slice(0, 300)}`);
  else {
    const text = readFileSync(out, 'utf8');
    checkReturned(m, problems, 'the export --with-proofs', JSON.parse(text) as Record<string, unknown>[], text);
    const verified = await s.cli(['verify', '--verifier-key', VERIFIER_KEY, '--events', out, '--proofs', `${out}.proofs.json`, '--state', join(s.dir, 'verify.state'), '--url', s.app.url, '--key', s.key, '--json']);
    const summary = JSON.parse(verified.stdout || '{}') as { ok?: boolean; verdicts?: { ok: boolean; check: string }[] };
    if (verified.code !== 0 || summary.ok !== true) {
      problems.add(`verify with the pinned key fails: ${(summary.verdicts ?? []).filter((v) => !v.ok).map((v) => v.check).join('; ') || verified.stderr.slice(0, 300)}`);
    }
    const removal = (summary.verdicts ?? []).map((v) => /^(\d+) events pruned under the retention policy and (\d+) erased on request/.exec(v.check)).find(Boolean);
    const reported = removal ? { pruned: Number(removal[1]), erased: Number(removal[2]) } : { pruned: 0, erased: 0 };
    if (!isDeepStrictEqual(reported, { pruned: m.prunedTotal, erased })) problems.add(`verify reports ${reported.pruned} pruned and ${reported.erased} erased; the prune job removed ${m.prunedTotal} and ${erased} were erased`);
  }
  const plantedThrough = new Set((await s.slots()).filter((doc) => plantedBefore.has(doc._id)).map((doc) => doc._id));
  checkAudit(problems, '', audited, planted, plantedThrough, { pruned: m.prunedTotal, erased });
  await checkNoProofs(m, s, 'model', s.key, problems);

  const t3 = Date.now();
  if (s.stream) await checkStream(m, s, checkpoint.tree_size, problems);
  stepLog(`    signed ${t1 - t0} ms, export+audit ${t2 - t1} ms, verify ${t3 - t2} ms, stream ${Date.now() - t3} ms`);
  problems.throwIfAny(`after ${step} (ledger and stream)`);
}

interface Finding { kind?: string; event_id?: string; leaf_index?: number; detail?: string }

/**
 * `ledger audit`'s report: no finding but a `foreign` one naming a planted row (each planted row in
 * `events` all through the audit named so), and the removals counted as expected (null: not checked).
 */
function checkAudit(problems: Problems, whose: string, audited: { code: number; stdout: string; stderr: string }, planted: ReadonlySet<string>, through: ReadonlySet<string>, removed: { pruned: number; erased: number } | null): void {
  const report = (JSON.parse(audited.stdout || '{}') as { reports?: { findings: Finding[]; removed: { pruned: number; erased: number } }[] }).reports?.[0];
  if (!report) {
    problems.add(`ledger audit${whose} fails (${audited.code}): ${audited.stderr.slice(0, 300)}`);
    return;
  }
  const unexpected = report.findings.filter((f) => !(f.kind === 'foreign' && f.event_id !== undefined && planted.has(f.event_id)));
  const named = new Set(report.findings.filter((f) => f.kind === 'foreign').map((f) => f.event_id));
  const unnamed = [...through].filter((id) => !named.has(id));
  if (unexpected.length > 0) problems.add(`ledger audit${whose} fails (${audited.code}): ${JSON.stringify(unexpected).slice(0, 600)}`);
  if (unnamed.length > 0) problems.add(`ledger audit${whose} does not name the planted rows ${unnamed.join(', ')} (in events all through it) as foreign: ${JSON.stringify(report.findings).slice(0, 400)}`);
  if (report.findings.length > 0 && audited.code === 0) problems.add(`ledger audit${whose} exits 0 with ${report.findings.length} findings`);
  if (report.findings.length === 0 && audited.code !== 0) problems.add(`ledger audit${whose} exits ${audited.code} with no findings: ${audited.stderr.slice(0, 300)}`);
  if (removed && !isDeepStrictEqual(report.removed, removed)) problems.add(`ledger audit${whose} counts ${JSON.stringify(report.removed)} removed; expected ${JSON.stringify(removed)}`);
}

/** No planted row of `org` has a proof (it is never signed): 404. */
async function checkNoProofs(m: Model, s: System, org: PlantedRow['org'], key: string, problems: Problems): Promise<void> {
  await inParallel(m.planted.filter((p) => p.org === org), async (row) => {
    const res = await s.api(`/v1/events/${row.id}/proof`, { key });
    if (res.status !== 404) problems.add(`the proof of ${plantedName(row)} answers ${res.status}: ${res.text.slice(0, 200)}`);
  });
}

/** The other organization's log: signed over its genuine events, exported with proofs and verified, audited. */
async function checkOtherLedger(m: Model, s: System, problems: Problems): Promise<void> {
  const other = s.other;
  if (!m.other || !other || m.other.length === 0) return;
  const planted = plantedIds(m, 'other');
  const newest = await s.integrate(planted, other.id);
  const checkpoint = await valueWithin(async () => {
    const res = await s.api('/v1/ledger/checkpoint', { key: other.key });
    const size = (res.body as { tree_size?: number }).tree_size ?? 0;
    return size >= newest ? { tree_size: size } : null;
  }, 10_000);
  if (!checkpoint || checkpoint.tree_size < newest) problems.add(`the other organization's log is signed up to ${String(checkpoint?.tree_size)} of ${newest} events`);
  s.exports += 1;
  const out = join(s.dir, `export-${s.exports}-other.json`);
  const before = new Set((await s.slots(other.id)).filter((doc) => planted.has(doc._id)).map((doc) => doc._id));
  const [exported, audited] = await Promise.all([
    s.cli(['export', '--url', s.app.url, '--key', other.key, '--out', out, '--with-proofs']),
    s.cli(['ledger', 'audit', '--org', other.id, '--verifier-key', VERIFIER_KEY, '--json']),
  ]);
  if (exported.code !== 0) problems.add(`the other organization's export --with-proofs failed (${exported.code}): ${exported.stderr.slice(0, 300)}`);
  else {
    const text = readFileSync(out, 'utf8');
    const ids = (JSON.parse(text) as Record<string, unknown>[]).filter((e) => !String(e.action).startsWith('audit_ledger.') || planted.has(String(e.id))).map((e) => String(e.id));
    checkOtherReturned(m, problems, 'the other organization\'s export --with-proofs', ids, text);
    const verified = await s.cli(['verify', '--verifier-key', VERIFIER_KEY, '--events', out, '--proofs', `${out}.proofs.json`, '--state', join(s.dir, 'verify-other.state'), '--url', s.app.url, '--key', other.key, '--json']);
    const summary = JSON.parse(verified.stdout || '{}') as { ok?: boolean; verdicts?: { ok: boolean; check: string }[] };
    if (verified.code !== 0 || summary.ok !== true) problems.add(`verify of the other organization's export fails: ${(summary.verdicts ?? []).filter((v) => !v.ok).map((v) => v.check).join('; ') || verified.stderr.slice(0, 300)}`);
  }
  const through = new Set((await s.slots(other.id)).filter((doc) => before.has(doc._id)).map((doc) => doc._id));
  checkAudit(problems, ' of the other organization', audited, planted, through, null);
  await checkNoProofs(m, s, 'other', other.key, problems);
}

/** The stream from sequence number 1: every present event delivered (up to what was signed), no removed event's content after its removal. */
async function checkStream(m: Model, s: System, signed: number, problems: Problems): Promise<void> {
  const stream = s.stream as NonNullable<System['stream']>;
  const delivered = await valueWithin(async () => {
    const res = await s.api(`/v1/streams/${stream.id}`);
    const seq = (res.body as { delivered_seq?: number }).delivered_seq ?? 0;
    return seq >= signed ? seq : null;
  }, 20_000);
  if (delivered === null) {
    const res = await s.api(`/v1/streams/${stream.id}`);
    problems.add(`the stream delivered up to sequence number ${String(res.body?.delivered_seq)} of ${signed} signed (state ${String(res.body?.state)}, error ${JSON.stringify(res.body?.last_error ?? null)})`);
  }
  const arrivals: Arrival[] = [...stream.arrivals];
  checkNoPlanted(m, 'model', problems, 'the stream', arrivals.flatMap((a) => a.items.map((item) => String(item.event.id))), arrivals.map((a) => JSON.stringify(a.items)).join('\n'));
  const got = new Set<string>();
  for (const arrival of arrivals) {
    for (const item of arrival.items) {
      const id = String(item.event.id);
      got.add(id);
      const event = m.byId.get(id);
      const text = JSON.stringify(item);
      for (const marker of m.neverStored) if (text.includes(marker)) problems.add(`the stream delivered the content of a refused body (${marker})`);
      if (!event) {
        if (!String(item.event.action).startsWith('audit_ledger.')) problems.add(`the stream delivered event ${id} (${String(item.event.action)}), which was never acknowledged`);
        continue;
      }
      if (item.receipt.leaf_index + 1 !== event.seq) problems.add(`the stream delivered ${named(event)} at sequence number ${item.receipt.leaf_index + 1}`);
      if (event.removed && arrival.at > event.removed.at + STREAM_GRACE_MS) {
        problems.add(`the stream delivered the removed ${named(event)} ${arrival.at - event.removed.at} ms after its removal was answered`);
      } else {
        const difference = contentDifference(item.event, event);
        if (difference) problems.add(`the stream delivered ${named(event)} changed: ${difference}`);
      }
    }
  }
  const upTo = delivered ?? 0;
  for (const event of presentEvents(m)) if (event.seq <= upTo && !got.has(event.id)) problems.add(`the stream never delivered the acknowledged ${named(event)}`);
}
