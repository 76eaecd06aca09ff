/**
 * Event schemas: the single source for validation, TypeScript types, the REST surface and openapi.json.
 * Field names follow interface.md §2.1 and §4.1 to the letter.
 */
import { z } from 'zod';
import { CSV_COLUMNS as CSV_FIELDS, EVENT_FIELDS, type EventField, type TEvent } from './eventFields';
import { ZLedgerReceipt, ZSeq } from './ledger/receipt';
import { ZRemovedNotice } from './retention';
import { isReservedAction, RESERVED_ACTION_PREFIX } from './selfAudit';
import { text } from './text';
import { parseIsoDateTime, parseRangeBound } from './time';

/** The issue message that marks a required field as absent; see `domain/validation.ts`. */
export const REQUIRED = 'Required';

/** Maximum lengths, documented in the README: identifiers are short, display names may be long. */
export const LIMITS = { id: 256, name: 1024, email: 320, cursor: 512, bodyBytes: 1024 * 1024, metadataDepth: 64 } as const;

/**
 * What is wrong with a metadata object, or null: objects or arrays nested deeper than
 * LIMITS.metadataDepth levels (said first), or a string or key with an unpaired UTF-16 surrogate, which
 * the ledger's canonical JSON (RFC 8785) cannot represent. One iterative walk: the values it guards
 * against would overflow the stack of any recursive one, JSON.stringify's included. Only objects and
 * arrays are stacked, strings are checked where they are met: it runs for every event written.
 */
export function metadataProblem(value: Record<string, unknown>): string | null {
  const max = LIMITS.metadataDepth;
  let unpaired = false;
  const stack: [object, number][] = [[value, 1]];
  while (stack.length) {
    const [current, depth] = stack.pop() as [object, number];
    if (depth > max) return `must not nest objects or arrays more than ${max} levels deep`;
    const isArray = Array.isArray(current);
    for (const key of Object.keys(current)) {
      if (!isArray) unpaired ||= !key.isWellFormed();
      const child = (current as Record<string, unknown>)[key];
      if (typeof child === 'string') unpaired ||= !child.isWellFormed();
      else if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return unpaired ? 'must be well-formed Unicode (a string in it has an unpaired surrogate)' : null;
}

/**
 * Words of a schema's own for a value of the wrong type only. Zod applies a schema's `error` to every
 * issue of that schema, its length and bound checks too, which domain/validation.ts words.
 */
export const wrongType = (message: string) => ({ error: (issue: { code?: string }) => (issue.code === 'invalid_type' ? message : undefined) });

/** Marks an absent value as missing (spec rule 4.1.1); any other wrong type is worded in domain/validation.ts. */
const required = { error: (issue: { input?: unknown }) => (issue.input === undefined ? REQUIRED : undefined) };

/** A required identifier-like string: absent or empty counts as missing (spec rule 4.1.1). */
const requiredId = text(required).min(1, REQUIRED).max(LIMITS.id);

/** An optional string; null is accepted as "not given", which is how many clients spell absence. */
const optionalText = (max: number) => text().max(max).nullish();

const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Metadata: any JSON object, kept exactly (but for unpaired surrogates: the ledger hashes events as RFC
 * 8785 canonical JSON, which cannot represent them). `z.record` would rebuild the object and drop a `__proto__`
 * key, so the object is checked and passed through as received. One custom schema with one predicate:
 * a refinement would be a derived schema that openapi generation walks back to its undocumented parent.
 */
export const ZMetadata = z
  .custom<Record<string, unknown>>((value) => isJsonObject(value) && metadataProblem(value) === null, {
    error: (issue) => (isJsonObject(issue.input) ? (metadataProblem(issue.input) ?? 'is not valid metadata') : 'must be a JSON object'),
  })
  .meta({ override: { type: 'object', additionalProperties: true } });

export { isReservedAction, RESERVED_ACTION_PREFIX } from './selfAudit';

/** A string parsed into a Date once, here: `parse` returns null for what it refuses, with `message`. */
const parsedDate = (schema: z.ZodString, parse: (text: string) => Date | null, message: string) =>
  schema.transform((value, ctx) => {
    const date = parse(value);
    if (date) return date;
    ctx.issues.push({ code: 'custom', message, input: value });
    return z.NEVER;
  });

const ZEventTimestampInput = parsedDate(
  text(wrongType('must be an ISO 8601 datetime string')).max(64, 'must be an ISO 8601 datetime'),
  parseIsoDateTime,
  'must be a valid ISO 8601 datetime with a UTC designator or offset, e.g. 2024-01-15T10:30:00.000Z',
).meta({ description: 'ISO 8601 datetime with Z or an offset; stored in UTC with millisecond precision' });

export const ZCreateEventInput = z
  .strictObject(
    {
      actor: z.strictObject(
        {
          id: requiredId.meta({ description: 'Identifier of the user who performed the action' }),
          name: optionalText(LIMITS.name),
          email: optionalText(LIMITS.email),
        },
        required,
      ),
      action: requiredId
        .refine((action) => !isReservedAction(action), `must not start with "${RESERVED_ACTION_PREFIX}": that namespace is the service's own records`)
        .meta({ description: `What happened, in dot notation: invoice.created. Actions starting with "${RESERVED_ACTION_PREFIX}" (any case) are the service's own and refused.` }),
      resource: z.strictObject(
        {
          type: requiredId,
          id: requiredId,
          name: optionalText(LIMITS.name),
        },
        required,
      ),
      metadata: ZMetadata.nullish(),
      organization_id: optionalText(LIMITS.id).refine((v) => v !== '', 'must not be empty'),
      timestamp: ZEventTimestampInput.nullish(),
      producer_signature: optionalText(LIMITS.id).meta({
        description: 'Required from an API key bound to a producer key, refused from any other: the producer\'s Ed25519 signature (base64) of the event\'s content (docs/trust-model.md, "Producer signatures")',
      }),
    },
  )
  .meta({ id: 'CreateEventInput' });
export type TCreateEventInput = z.infer<typeof ZCreateEventInput>;

/**
 * An Idempotency-Key (docs/api.md, decision 17): sent as the `Idempotency-Key` header, or by tRPC
 * clients, which send no headers of their own per call, as the `idempotency_key` input field.
 */
export const ZIdempotencyKey = z
  .string()
  .regex(/^[\x20-\x7e]{1,255}$/, 'must be 1 to 255 printable ASCII characters')
  .meta({ description: 'Makes retries safe: a request repeated with the same key stores nothing new and answers as the first did (docs/api.md, decision 17)' });

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

/** POST /v1/events: one create body, and the idempotency key for clients that cannot send the header. */
export const ZCreateEventRequest = ZCreateEventInput.extend({ idempotency_key: ZIdempotencyKey.optional() });

/** POST /v1/events/batch. The upper bound is configured (BATCH_MAX_EVENTS) and checked by the service. */
export const ZCreateBatchRequest = z
  .strictObject(
    {
      events: z
        .array(ZCreateEventInput, required)
        .min(1)
        .meta({ description: 'Create bodies as for POST /v1/events: 1 to BATCH_MAX_EVENTS (default 1000), stored all or none' }),
      idempotency_key: ZIdempotencyKey.optional(),
    },
  )
  .meta({ id: 'CreateEventBatchInput' });

/**
 * Metadata as the API shows it: the stored object passed through as it is. `z.record` would rebuild it
 * and drop a `__proto__` key (a /trpc create body may hold one; /v1 refuses it at the door), so the
 * answer would differ from the text the ledger hashed. Documented as the record it is.
 */
const ZMetadataShown = z
  .custom<Record<string, unknown>>(isJsonObject, { error: 'must be a JSON object' })
  .meta({ override: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: {} } });

/** A field's schema in the API form, by its kind (src/domain/eventFields.ts). */
function apiSchema(field: EventField): z.ZodType {
  const base = field.kind === 'json' ? ZMetadataShown : field.omitWhenNull ? z.string().optional() : field.kind === 'optionalText' ? z.string().nullable() : z.string();
  const meta = { ...(field.description ? { description: field.description } : {}), ...(field.examples ? { examples: [...field.examples] } : {}) };
  return Object.keys(meta).length ? base.meta(meta) : base;
}

/** An event as the API shows it: every field of the table, in its order. */
export const ZEvent = z
  .object(Object.fromEntries((EVENT_FIELDS as readonly EventField[]).map((field) => [field.api, apiSchema(field)])))
  .meta({ id: 'Event' }) as unknown as z.ZodObject<{
  [K in keyof TEvent]-?: undefined extends TEvent[K] ? z.ZodOptional<z.ZodType<Exclude<TEvent[K], undefined>>> : z.ZodType<TEvent[K]>;
}>;
export type { TEvent };

/**
 * An event removed under retention since it was stored, as a replayed request (its Idempotency-Key) is
 * answered: its id and what became of it, never its content.
 */
export const ZRemovedEvent = z
  .object({
    id: z.string().meta({ description: 'The event\'s id, as first answered' }),
    removed: z.enum(['pruned', 'erased']).meta({ description: 'Pruned under the retention policy, or erased on request' }),
    removed_by: z.number().int().nullable().meta({ description: 'The sequence number of the retention entry of the organization\'s log that removed it' }),
  })
  .meta({ id: 'RemovedEvent' });
export type TRemovedEvent = z.infer<typeof ZRemovedEvent>;

/** A removed event's place in the log: its leaf stays, the event does not. */
export const ZRemovedReceipt = z
  .object({
    seq: ZSeq,
    leaf_index: z.number().int().meta({ description: 'The removed event\'s position in the Merkle tree (its leaf stays): seq − 1' }),
    removed: z.literal(true),
  })
  .meta({ id: 'RemovedReceipt' });

const ZStoredEvent = z.union([ZEvent, ZRemovedEvent]);
const ZStoredReceipt = z.union([ZLedgerReceipt, ZRemovedReceipt]);

export const ZCreateEventOutput = z.object({
  success: z.literal(true),
  event: ZStoredEvent.meta({ description: 'The stored event; a RemovedEvent only when a replayed request\'s event was removed under retention since' }),
  ledger: ZStoredReceipt,
});
export type TCreateEventOutput = z.infer<typeof ZCreateEventOutput>;

export const ZCreateBatchOutput = z.object({
  success: z.literal(true),
  events: z.array(ZStoredEvent).meta({ description: 'The stored events, in request order (a RemovedEvent where a replayed request\'s event was removed under retention since)' }),
  ledger: z.array(ZStoredReceipt).meta({ description: 'Each event\'s ledger receipt, in the same order' }),
});
export type TCreateBatchOutput = z.infer<typeof ZCreateBatchOutput>;

const rangeBound = (bound: 'start' | 'end') =>
  parsedDate(
    text(wrongType('must be a date (YYYY-MM-DD) or an ISO 8601 datetime')).max(64, 'must be a date (YYYY-MM-DD) or an ISO 8601 datetime'),
    (value) => parseRangeBound(value, bound),
    'must be a valid date (YYYY-MM-DD) or ISO 8601 datetime',
  ).optional();

// "single": a query parameter given twice arrives as an array.
const filterText = text(wrongType('must be a single string')).min(1).max(LIMITS.id).optional();

/** Filters shared by list and export (interface.md §4.3, §4.4). Unknown parameters are refused. */
export const ZEventFilters = z.strictObject({
  actor_id: filterText,
  action: filterText,
  resource_type: filterText,
  resource_id: filterText,
  organization_id: filterText,
  start_date: rangeBound('start').meta({
    description: 'Inclusive lower bound: YYYY-MM-DD (start of that UTC day) or an ISO 8601 datetime',
  }),
  end_date: rangeBound('end').meta({
    description: 'Inclusive upper bound: YYYY-MM-DD (includes that whole UTC day) or an ISO 8601 datetime',
  }),
});
export type TEventFilters = z.infer<typeof ZEventFilters>;

export const ZListEventsInput = ZEventFilters.extend({
  limit: z
    .number()
    .int()
    .min(1)
    .max(1000)
    .optional()
    .meta({ description: 'Page size, 1 to 1000; default 50' }),
  cursor: text(wrongType('must be a single string'))
    .max(LIMITS.cursor, 'is not valid; pass next_cursor from the previous page unchanged')
    .optional()
    .meta({ description: 'Opaque next_cursor from the previous page' }),
});
export type TListEventsInput = z.infer<typeof ZListEventsInput>;

export const ZListEventsOutput = z
  .object({
    data: z.array(ZEvent),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
    removed: ZRemovedNotice.optional().meta({ description: 'Present once events were pruned or erased from the organization\'s log: how many, and why (they are in no page)' }),
  })
  .meta({ id: 'EventPage' });
export type TListEventsOutput = z.infer<typeof ZListEventsOutput>;

/** A ledger tree size in a query string: the export and its proofs sidecar pinned to one tree. */
export const ZTreeSizeParam = text(wrongType('must be a whole number'))
  .regex(/^[1-9][0-9]{0,14}$/, 'must be a whole number, at least 1')
  .transform(Number);

export const EXPORT_FORMATS = ['json', 'csv'] as const;
export const ZExportEventsInput = ZEventFilters.extend({
  format: z
    .enum(EXPORT_FORMATS)
    .optional()
    .meta({ description: 'json (default) or csv' }),
  tree_size: ZTreeSizeParam.optional().meta({
    description: 'Only events with a sequence number up to this (the tree of a signed checkpoint of that size); default: the newest event when the export starts. The response says which in `Ledger-Tree-Size`',
  }),
});

const EVENT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether a string has the form of an event id (a lower-case UUID, as the service assigns them). */
export function isEventId(id: string): boolean {
  return EVENT_ID.test(id);
}

// No length or format rule here: any id that is not one of the caller's events is a plain 404.
export const ZGetEventInput = z.object({ id: text() });

/** The spec's CSV columns, in order (interface.md §4.4 rule 3): from the field table. Metadata is not exported to CSV. */
export const CSV_COLUMNS = CSV_FIELDS as readonly Exclude<keyof TEvent, 'metadata'>[];
