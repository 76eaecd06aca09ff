/** The events explorer: the same schemas and service as /v1's list and get, read with the session's organization. */
import { z } from 'zod';
import { ZEvent, ZGetEventInput, ZListEventsInput, ZListEventsOutput, type TEvent } from '../../domain/event';
import { bindingOf, PRODUCER_BOUND_ACTION } from '../../domain/producerSignature';
import { text } from '../../domain/text';
import type { Principal } from '../../services/auth';
import type { EventService } from '../../services/events';
import { sessionProcedure } from '../init';

export const listSessionEvents = sessionProcedure
  .meta({ permission: 'events:read' })
  .input(ZListEventsInput)
  .output(ZListEventsOutput)
  .query(async ({ ctx, input }) => {
    const [page, removed] = await Promise.all([ctx.services.events.list(ctx.principal, input), ctx.services.retention.notice(ctx.principal.tenant)]);
    return removed ? { ...page, removed } : page;
  });

export const getSessionEvent = sessionProcedure
  .meta({ permission: 'events:read' })
  .input(ZGetEventInput)
  .output(ZEvent)
  .query(({ ctx, input }) => ctx.services.events.get(ctx.principal, input.id));

export const ZProducerBindingInput = z.strictObject({ api_key_id: text().min(1).max(100) });

/**
 * The log's entry binding an API key to a producer key (domain/producerSignature.ts, `bindingOf`), as
 * stored, or null: the event page proves its inclusion like any event's and then checks the key's event
 * against the producer key it names. It is read from the stored events, so whoever can write the database
 * could hide it from this answer (the page would then take the key as unbound): the page says "bound per
 * the log's entry", and `verify` over a whole export, which reads every entry, is the complete check.
 */
export const sessionProducerBinding = sessionProcedure
  .meta({ permission: 'events:read' })
  .input(ZProducerBindingInput)
  .output(ZEvent.nullable())
  .query(({ ctx, input }) => bindingEntryOf(ctx.services.events, ctx.principal, input.api_key_id));

/**
 * The oldest binding entry of `keyId` in the principal's organization (its action is reserved, so only
 * the service wrote one). The oldest: the service never records a second binding of a key to another
 * producer key, so a later one is a forgery signed in with the service's key, and the first, already
 * witnessed, is the one that stands (`verify` over a whole export fails on the two).
 */
async function bindingEntryOf(events: EventService, principal: Principal, keyId: string): Promise<TEvent | null> {
  let cursor: string | undefined;
  let oldest: TEvent | null = null;
  do {
    const page = await events.list(principal, { action: PRODUCER_BOUND_ACTION, resource_id: keyId, limit: 100, ...(cursor === undefined ? {} : { cursor }) });
    for (const event of page.data) if (bindingOf(event)?.keyId === keyId) oldest = event;
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return oldest;
}
