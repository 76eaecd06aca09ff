/**
 * One table of event fields (src/domain/eventFields.ts) drives every list of them. Here a field is
 * added to the table (the module replaced, everything else loaded fresh) and found in each place: the
 * API schema and openapi's Event, the stored-to-API mapping and the export's JSON text, the ledger's
 * canonical text, the idempotency request hash, a create body's mapping, the forward wire format and
 * the CSV columns. Then, with the real table, the same places agree with each other.
 */
import type * as EventModule from '../../src/domain/event';
import type * as Fields from '../../src/domain/eventFields';
import type * as Formats from '../../src/domain/ledger/formats';
import type * as ForwardWire from '../../src/ingest/forwardWire';
import type * as Idempotency from '../../src/services/idempotency';

type FieldsModule = typeof Fields;
const SEVERITY = { api: 'severity', stored: 'severity', kind: 'text', input: ['severity'], max: 'id', csv: true } as const;

/** The modules that list fields, loaded against a table with one more field. */
async function withSeverity() {
  let loaded: { fields: FieldsModule; event: typeof EventModule; formats: typeof Formats; idempotency: typeof Idempotency; wire: typeof ForwardWire } | undefined;
  await jest.isolateModulesAsync(async () => {
    const actual = jest.requireActual<FieldsModule>('../../src/domain/eventFields');
    const table = [...actual.EVENT_FIELDS, SEVERITY];
    // The module with the longer table, and what it derives from it, as the module itself does at load.
    jest.doMock('../../src/domain/eventFields', () => ({ ...actual, ...actual.deriveFromFields(table), EVENT_FIELDS: table }));
    loaded = {
      fields: await import('../../src/domain/eventFields'),
      event: await import('../../src/domain/event'),
      formats: await import('../../src/domain/ledger/formats'),
      idempotency: await import('../../src/services/idempotency'),
      wire: await import('../../src/ingest/forwardWire'),
    };
    jest.dontMock('../../src/domain/eventFields');
  });
  if (!loaded) throw new Error('modules not loaded');
  return loaded;
}

const stored = {
  _id: '0190c8e4-0000-7000-8000-000000000001', tenant: 'org_1', seq: 1, month: '2026-11', month_seq: 1,
  ts: new Date('2026-11-24T10:00:00.000Z'), received_at: new Date('2026-11-24T10:00:01.000Z'),
  actor_id: 'user_1', actor_name: null, actor_email: null, action: 'a.b', resource_type: 'r', resource_id: 'r1', resource_name: null,
  metadata: '{"k":1}', organization_id: 'org_1', api_key_id: 'key_1',
};

test('a field added to the table reaches every place that lists an event\'s fields', async () => {
  const { fields, event, formats, idempotency, wire } = await withSeverity();
  const doc = { ...stored, severity: 'high' } as unknown as Fields.StoredEventFields;

  // The API schema, hence openapi.json's Event.
  expect(Object.keys(event.ZEvent.shape)).toContain('severity');
  // Stored → API, and the export's JSON text (same keys, same order).
  const api = fields.toApiEvent(doc) as unknown as Record<string, unknown>;
  expect(api.severity).toBe('high');
  expect(JSON.parse(fields.toApiEventJson(doc))).toEqual(api);
  expect(Object.keys(JSON.parse(fields.toApiEventJson(doc)))).toEqual(Object.keys(api));
  // The ledger's canonical text: what each event's hash commits to.
  expect(formats.canonicalEventText(fields.hashInputOfStored(doc))).toContain('"severity":"high"');
  expect(formats.canonicalEventText(fields.hashInputOfStored(doc))).toBe(formats.canonicalJson(api));
  // A create body's mapping, and the idempotency request hash: the same body with another severity is another request.
  const body = { actor: { id: 'u' }, action: 'a.b', resource: { type: 'r', id: 'r1' }, severity: 'high' };
  const content = fields.contentOf(body, 'org_1') as unknown as Record<string, unknown>;
  expect(content.severity).toBe('high');
  const other = fields.contentOf({ ...body, severity: 'low' }, 'org_1');
  expect(idempotency.requestHash('event', [other])).not.toBe(idempotency.requestHash('event', [content as unknown as Fields.EventContent]));
  // The forward wire: a draft must carry it, and carries it through.
  const draft = { ...stored, severity: 'high', ts: stored.ts.toISOString(), received_at: stored.received_at.toISOString() } as Record<string, unknown>;
  delete draft.seq;
  delete draft.month;
  delete draft.month_seq;
  const request = (drafts: unknown[]) => wire.ZForwardRequest.safeParse({ writes: [{ drafts, key_hash: 'a'.repeat(64), cap_exempt: false }] });
  expect(request([draft]).success).toBe(true);
  const { severity: _left, ...without } = draft;
  expect(request([without]).success).toBe(false);
  // The CSV columns.
  expect(event.CSV_COLUMNS).toContain('severity');
});

test('with the real table, the places agree: API keys in table order, the export\'s text, the canonical text, the wire', async () => {
  const fields = await import('../../src/domain/eventFields');
  const { ZEvent, CSV_COLUMNS } = await import('../../src/domain/event');
  const { canonicalEventText, canonicalJson } = await import('../../src/domain/ledger/formats');
  const every = fields.EVENT_FIELDS.map((f) => f.api);
  const omissible = fields.EVENT_FIELDS.filter((f) => 'omitWhenNull' in f && f.omitWhenNull).map((f) => f.api);
  expect(omissible).toEqual(['producer_signature']);
  // An event without the omissible fields shows (and hashes) none of them; with them, every field in order.
  for (const doc of [stored, { ...stored, producer_signature: 'c2lnbmF0dXJl' }] as unknown as Fields.StoredEventFields[]) {
    const api = fields.toApiEvent(doc);
    expect(Object.keys(api)).toEqual('producer_signature' in doc ? every : every.filter((f) => !omissible.includes(f)));
    expect(ZEvent.strict().parse(api)).toEqual(api);
    expect(fields.toApiEventJson(doc)).toBe(JSON.stringify(api));
    expect(canonicalEventText(fields.hashInputOfStored(doc))).toBe(canonicalJson(api));
    expect(canonicalEventText(fields.hashInputOfEvent(api))).toBe(canonicalJson(api));
  }
  expect(Object.keys(ZEvent.shape)).toEqual(every);
  expect(CSV_COLUMNS).toEqual(['id', 'timestamp', 'actor_id', 'actor_name', 'action', 'resource_type', 'resource_id', 'resource_name', 'organization_id']);
  // The hash of a request does not change with this redesign: the client's fields in the order it always had.
  const body = { actor: { id: 'u', name: 'N' }, action: 'a.b', resource: { type: 'r', id: 'r1' }, metadata: { k: 1 }, timestamp: new Date(0) };
  const content = fields.contentOf(body, 'org_1');
  expect(content).not.toHaveProperty('producer_signature');
  expect(fields.clientValues(content)).toEqual(['1970-01-01T00:00:00.000Z', 'u', 'N', null, 'a.b', 'r', 'r1', null, '{"k":1}', 'org_1']);
  expect(fields.clientValues(fields.contentOf({ ...body, producer_signature: 'sig' }, 'org_1')).at(-1)).toBe('sig');
});
