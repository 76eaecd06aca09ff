/**
 * What one instance sends another when it forwards events to the organization's writer, and the answer:
 * defined once, parsed on both sides.
 */
import { Binary } from 'mongodb';
import { z } from 'zod';
import { isTombstone, type StoredEvent } from '../db/documents';
import { ERROR_CODES, type ErrorCode } from '../domain/errors';
import { isEventId, LIMITS, metadataProblem, ZIdempotencyKey } from '../domain/event';
import { EVENT_FIELDS, type EventField } from '../domain/eventFields';
import type { EventDraft, KeyedWriteUnit } from './writeUnit';

/** The instance-to-instance path; not under /v1 and not in openapi.json. */
export const FORWARD_PATH = '/internal/forward-events';
/** The installation's MAC of a forward (bound to the receiver) and of its answer (bound to the request's MAC). */
export const INSTANCE_MAC_HEADER = 'x-instance-mac';
/** A forward's body: generous, since a round may carry up to 1,000 events with large metadata. */
export const FORWARD_MAX_BYTES = 64 * 1024 * 1024;
/** Events sent in one forward, unless one batch alone is larger. */
export const MAX_FORWARD_EVENTS = 1000;

const ZDate = z.iso.datetime({ offset: true }).transform((s) => new Date(s));
const id = z.string().min(1).max(LIMITS.id);

/** Whether `text` is a JSON object that a create body could have given as metadata. */
function isMetadataJson(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) && metadataProblem(value as Record<string, unknown>) === null;
  } catch {
    return false;
  }
}

/**
 * A forwarded event as strictly as a public request's: the sending instance built it from a validated
 * create body, and the receiver takes nothing on trust (the tenant and key are checked against the key
 * by the writer, a cap exemption against its idempotency claim by `Ingest.writeForwarded`).
 */
const MAX_LENGTH = { id: LIMITS.id, name: LIMITS.name, email: LIMITS.email } as const;

/** A field of the table (src/domain/eventFields.ts) as the wire carries it, checked as strictly as a create body. */
function wireSchema(field: EventField): z.ZodType {
  switch (field.kind) {
    case 'id':
      return z.string().refine(isEventId, 'must be an event id');
    case 'time':
      return ZDate;
    case 'json':
      return z.string().max(LIMITS.bodyBytes).refine(isMetadataJson, 'must be the JSON text of a metadata object');
    case 'optionalText':
      return z.string().max(MAX_LENGTH[field.max ?? 'name']).nullable();
    case 'text':
      return z.string().min(1).max(MAX_LENGTH[field.max ?? 'id']);
  }
}

const ZDraft = z.strictObject({
  ...Object.fromEntries((EVENT_FIELDS as readonly EventField[]).map((field) => [field.stored, field.omitWhenNull ? wireSchema(field).optional() : wireSchema(field)])),
  tenant: id,
  received_at: ZDate,
  idempotency_key: ZIdempotencyKey.optional(),
  salt: z.string().regex(/^[0-9a-f]{64}$/).optional(),
}) as unknown as z.ZodType<EventDraft>;

/** A write unit (writeUnit.ts) on the wire. */
const ZWireUnit = z.strictObject({ drafts: z.array(ZDraft).min(1).max(10_000), key_hash: z.string().regex(/^[0-9a-f]{64}$/), cap_exempt: z.boolean() });

/** Write units: at most MAX_FORWARD_EVENTS events in all, but a unit is never split. */
export const ZForwardRequest = z.object({
  writes: z.array(ZWireUnit).min(1).max(MAX_FORWARD_EVENTS),
});

/** The unit as JSON will carry it (dates become ISO strings, which ZDraft reads back). */
export function unitToWire(unit: KeyedWriteUnit): { drafts: EventDraft[]; key_hash: string; cap_exempt: boolean } {
  return { drafts: unit.drafts, key_hash: unit.keyHash, cap_exempt: unit.capExempt };
}

export function unitFromWire(wire: z.output<typeof ZWireUnit>): KeyedWriteUnit {
  return { drafts: wire.drafts, keyHash: wire.key_hash, capExempt: wire.cap_exempt };
}

/** A message's JSON, or undefined when it is not JSON (each side answers that as it must). */
export function parseWire(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Where the writer placed an event, and its salt: the rest of the stored document is the draft sent. The
 * salt is random per draft, so an event stored already under its id (a retry's twin) has another one.
 */
export const ZPlacement = z.object({
  seq: z.number().int(),
  month: z.string(),
  month_seq: z.number().int(),
  salt: z.string().regex(/^[0-9a-f]{64}$/).optional(),
  /** The event stored under this id was removed since (a retried request's): its tombstone, never its content. */
  removed: z.object({ kind: z.enum(['pruned', 'erased']), by: z.number().int().nullable(), leaf_v: z.union([z.literal(1), z.literal(2)]), leaf: z.string().regex(/^[0-9a-f]{64}$/) }).optional(),
});
export type TPlacement = z.infer<typeof ZPlacement>;

/** What the writing instance answers of a stored event (or of the tombstone of one removed since). */
export function placementOf(doc: StoredEvent): TPlacement {
  const place = { seq: doc.seq, month: doc.month, month_seq: doc.month_seq };
  if (isTombstone(doc)) return { ...place, removed: { kind: doc.removed, by: doc.removed_by, leaf_v: doc.leaf_v, leaf: Buffer.from(doc.leaf.buffer).toString('hex') } };
  return doc.salt === undefined ? place : { ...place, salt: doc.salt };
}

/** The stored document a placement describes: the draft sent, where it was placed; or the tombstone. */
export function storedOf(draft: EventDraft, placement: TPlacement): StoredEvent {
  const { removed, ...place } = placement;
  if (removed) {
    return { _id: draft._id, tenant: draft.tenant, seq: place.seq, month: place.month, month_seq: place.month_seq, removed: removed.kind, removed_by: removed.by, leaf_v: removed.leaf_v, leaf: new Binary(Buffer.from(removed.leaf, 'hex')) };
  }
  return { ...draft, ...place };
}

const ZRefusal = z.object({
  error: z.object({
    code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]),
    message: z.string(),
    retry_after: z.number().optional(),
  }),
});

/** One result per write, in order: the placement of each of its events, in order, or its refusal. */
export const ZForwardResponse = z.object({ results: z.array(z.union([z.object({ placements: z.array(ZPlacement) }), ZRefusal])) });
export type TForwardResponse = z.infer<typeof ZForwardResponse>;
