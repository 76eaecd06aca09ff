/**
 * What one instance sends another when it forwards events to the organization's writer, and the answer:
 * defined once, parsed on both sides.
 */
import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from '../domain/errors';
import type { EventDraft } from './eventWriter';

/** The instance-to-instance path; not under /v1 and not in openapi.json. */
export const FORWARD_PATH = '/internal/forward-events';
export const FORWARD_TOKEN_HEADER = 'x-instance-token';
/** A forward's body: generous, since a round may carry up to 1,000 events with large metadata. */
export const FORWARD_MAX_BYTES = 64 * 1024 * 1024;
/** Events sent in one forward, unless one batch alone is larger. */
export const MAX_FORWARD_EVENTS = 1000;

const ZDate = z.iso.datetime({ offset: true }).transform((s) => new Date(s));
const nullable = z.string().nullable();

const ZDraft = z.object({
  _id: z.string(),
  tenant: z.string(),
  ts: ZDate,
  received_at: ZDate,
  actor_id: z.string(),
  actor_name: nullable,
  actor_email: nullable,
  action: z.string(),
  resource_type: z.string(),
  resource_id: z.string(),
  resource_name: nullable,
  metadata: z.string(),
  organization_id: z.string(),
  api_key_id: z.string(),
  idempotency_key: z.string().optional(),
}) satisfies z.ZodType<EventDraft>;

/** One caller's events (see EventWriter.writeAll): at most MAX_FORWARD_EVENTS in all, but a batch is never split. */
export const ZForwardRequest = z.object({
  writes: z.array(z.object({ drafts: z.array(ZDraft).min(1), key_hash: z.string(), cap_exempt: z.boolean() })).min(1).max(MAX_FORWARD_EVENTS),
});
export type TForwardRequest = z.input<typeof ZForwardRequest>;

/** Where the writer placed an event: the rest of the stored document is the draft sent. */
export const ZPlacement = z.object({ seq: z.number().int(), month: z.string(), month_seq: z.number().int() });
export type TPlacement = z.infer<typeof ZPlacement>;

const ZRefusal = z.object({
  error: z.object({
    code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]),
    message: z.string(),
    retry_after: z.number().optional(),
  }),
});
export type TRefusal = z.infer<typeof ZRefusal>;

/** One result per write, in order: the placement of each of its events, in order, or its refusal. */
export const ZForwardResponse = z.object({ results: z.array(z.union([z.object({ placements: z.array(ZPlacement) }), ZRefusal])) });
export type TForwardResponse = z.infer<typeof ZForwardResponse>;
