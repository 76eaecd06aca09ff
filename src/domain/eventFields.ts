/**
 * An event's fields, written out once. Everything that lists them is derived from this table: the API
 * schema (`ZEvent`, hence openapi.json), the stored document's type, the stored-to-API mapping and the
 * export's JSON text, the ledger's canonical event text (what each event's hash commits to), the
 * idempotency request hash, the forward wire format, a create body's mapping and the CSV columns.
 * `test/unit/eventFields.test.ts` adds a field to this table and checks that it reaches each of them.
 */

/** How a field is kept and shown: stored as / shown as. */
export type FieldKind =
  /** The event id: assigned by the service, a UUIDv7 string. */
  | 'id'
  /** A Date stored, an ISO 8601 string shown. */
  | 'time'
  | 'text'
  /** A string or null (absent in a create body). */
  | 'optionalText'
  /** A JSON object: stored as its JSON text, shown as the object. */
  | 'json';

export interface EventField {
  /** Its name in the API (`GET /v1/events/:id`); the table's order is the order the API shows. */
  readonly api: string;
  /** Its name in the stored document. */
  readonly stored: string;
  readonly kind: FieldKind;
  /** Where a create body gives it (a path into the body); absent: the service sets it. */
  readonly input?: readonly string[];
  /** Longest value accepted from a client or another instance, for text kinds. */
  readonly max?: 'id' | 'name' | 'email';
  /** When a create body leaves it out: the organization that owns the event. */
  readonly defaultsToOwner?: boolean;
  /** One of the CSV export's columns (the interface's, in this order). */
  readonly csv?: boolean;
  /**
   * Absent rather than null when not given: from the API form, the stored document, the ledger's hash
   * input and the request hash. A field added after events were stored keeps their hashes and shapes.
   */
  readonly omitWhenNull?: boolean;
  readonly description?: string;
  readonly examples?: readonly string[];
}

export const EVENT_FIELDS = [
  { api: 'id', stored: '_id', kind: 'id', csv: true, description: 'UUID (version 7, time-ordered) assigned by the service' },
  { api: 'timestamp', stored: 'ts', kind: 'time', input: ['timestamp'], csv: true, description: 'YYYY-MM-DDTHH:mm:ss.sssZ', examples: ['2024-01-15T10:30:00.000Z'] },
  { api: 'actor_id', stored: 'actor_id', kind: 'text', input: ['actor', 'id'], max: 'id', csv: true },
  { api: 'actor_name', stored: 'actor_name', kind: 'optionalText', input: ['actor', 'name'], max: 'name', csv: true },
  { api: 'actor_email', stored: 'actor_email', kind: 'optionalText', input: ['actor', 'email'], max: 'email' },
  { api: 'action', stored: 'action', kind: 'text', input: ['action'], max: 'id', csv: true },
  { api: 'resource_type', stored: 'resource_type', kind: 'text', input: ['resource', 'type'], max: 'id', csv: true },
  { api: 'resource_id', stored: 'resource_id', kind: 'text', input: ['resource', 'id'], max: 'id', csv: true },
  { api: 'resource_name', stored: 'resource_name', kind: 'optionalText', input: ['resource', 'name'], max: 'name', csv: true },
  // Stored as JSON text: FerretDB rejects keys with `.` or a leading `$` and nested arrays (MongoDB restricts such keys too).
  { api: 'metadata', stored: 'metadata', kind: 'json', input: ['metadata'] },
  { api: 'organization_id', stored: 'organization_id', kind: 'text', input: ['organization_id'], max: 'id', defaultsToOwner: true, csv: true },
  { api: 'api_key_id', stored: 'api_key_id', kind: 'text', max: 'id' },
  // Only on events of an API key bound to a producer key (src/domain/producerSignature.ts).
  {
    api: 'producer_signature', stored: 'producer_signature', kind: 'optionalText', input: ['producer_signature'], max: 'id', omitWhenNull: true,
    description: 'The producer\'s Ed25519 signature (base64) of the event\'s content, present only on events of an API key bound to a producer key (docs/trust-model.md, "Producer signatures")',
  },
] as const satisfies readonly EventField[];

type Field = (typeof EVENT_FIELDS)[number];
type Omissible = Extract<Field, { omitWhenNull: true }>;
type Always = Exclude<Field, Omissible>;
type ApiType<K extends FieldKind> = K extends 'json' ? Record<string, unknown> : K extends 'optionalText' ? string | null : string;
type StoredType<K extends FieldKind> = K extends 'json' ? string : K extends 'time' ? Date : K extends 'optionalText' ? string | null : string;

/** An event as the API shows it. */
export type TEvent = { [F in Always as F['api']]: ApiType<F['kind']> } & { [F in Omissible as F['api']]?: string };
/** The table's fields as an event document stores them. */
export type StoredEventFields = { [F in Always as F['stored']]: StoredType<F['kind']> } & { [F in Omissible as F['stored']]?: string };
/** What a create body gives (the stored fields the client sets), before the service adds its own. */
export type EventContent = { [F in Always as F extends { input: readonly string[] } ? F['stored'] : never]: F['kind'] extends 'time' ? Date | null : StoredType<F['kind']> } & {
  [F in Omissible as F['stored']]?: string;
};

/** Whether a field's value is left out where it is written (an omissible field's null or absence). */
export const leftOut = (field: EventField, value: unknown): boolean => field.omitWhenNull === true && (value === null || value === undefined);

/**
 * A stored field's API value; `parseJson` false leaves a json field as the text it is stored as (for
 * writers that splice it into JSON as it is).
 */
export function apiValue(field: EventField, value: unknown, parseJson: boolean): unknown {
  if (field.kind === 'time') return (value as Date).toISOString();
  if (field.kind === 'json') return parseJson ? JSON.parse(value as string) : value;
  return value ?? null;
}

/** Everything derived from a table of fields; the module exports it for EVENT_FIELDS (a test derives it for a longer table). */
export function deriveFromFields(table: readonly EventField[]) {
  const clientFields = table.filter((f) => f.input !== undefined);
  return {
    /** The fields a client gives, in table order: what the idempotency request hash covers. */
    CLIENT_FIELDS: clientFields,
    /** The CSV export's columns, in order (never a json field: a cell holds text). */
    CSV_COLUMNS: table.filter((f) => f.csv === true && f.kind !== 'json').map((f) => f.api),

    /** A stored event in its API form. */
    toApiEvent: (doc: StoredEventFields): TEvent => {
      const stored = doc as unknown as Record<string, unknown>;
      const event: Record<string, unknown> = {};
      for (const field of table) if (!leftOut(field, stored[field.stored])) event[field.api] = apiValue(field, stored[field.stored], true);
      return event as TEvent;
    },

    /**
     * The event's API form as JSON text, without parsing the stored metadata back: the export's hot loop.
     * Key order and content match `JSON.stringify(toApiEvent(doc))`, which a test checks.
     */
    toApiEventJson: (doc: StoredEventFields): string => {
      const stored = doc as unknown as Record<string, unknown>;
      let text = '';
      for (const field of table) {
        if (leftOut(field, stored[field.stored])) continue;
        const value = apiValue(field, stored[field.stored], false);
        text += `${text ? ',' : '{'}"${field.api}":${field.kind === 'json' ? (value as string) : JSON.stringify(value)}`;
      }
      return `${text}}`;
    },

    /**
     * The event's fields by API name with json fields as JSON text: what the ledger's canonical text is
     * written from (`canonicalEventText`), from a stored event without parsing its metadata back.
     */
    hashInputOfStored: (doc: StoredEventFields): Record<string, unknown> => {
      const stored = doc as unknown as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const field of table) if (!leftOut(field, stored[field.stored])) out[field.api] = apiValue(field, stored[field.stored], false);
      return out;
    },

    /** The same from an event in its API form (a verifier's, read from an export). */
    hashInputOfEvent: (event: TEvent): Record<string, unknown> => {
      const given = event as unknown as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const field of table) if (!leftOut(field, given[field.api])) out[field.api] = field.kind === 'json' ? JSON.stringify(given[field.api]) : given[field.api];
      return out;
    },

    /** A create body's content as it will be stored; `owner`: the organization whose key sent it. */
    contentOf: (body: Record<string, unknown>, owner: string): EventContent => {
      const content: Record<string, unknown> = {};
      for (const field of clientFields) {
        let value: unknown = body;
        for (const step of field.input ?? []) value = (value as Record<string, unknown> | null | undefined)?.[step];
        if (field.kind === 'json') value = JSON.stringify(value ?? {});
        else if (value === undefined || value === null) value = field.defaultsToOwner ? owner : null;
        if (!leftOut(field, value)) content[field.stored] = value;
      }
      return content as EventContent;
    },

    /** The client's fields of a content, in table order, as the request hash takes them (times as ISO text). */
    clientValues: (content: EventContent): unknown[] => {
      const stored = content as unknown as Record<string, unknown>;
      return clientFields.filter((field) => !leftOut(field, stored[field.stored])).map((field) => {
        const value = stored[field.stored];
        return field.kind === 'time' ? ((value as Date | null)?.toISOString() ?? null) : value;
      });
    },
  };
}

export const { CLIENT_FIELDS, CSV_COLUMNS, toApiEvent, toApiEventJson, hashInputOfStored, hashInputOfEvent, contentOf, clientValues } = deriveFromFields(EVENT_FIELDS);
