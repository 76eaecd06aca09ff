import { ZCreateEventOutput, ZCreateEventRequest } from '../../domain/event';
import { apiKeyProcedure } from '../init';
import { IDEMPOTENCY_HEADERS, idempotencyKeyOf } from './idempotencyKey';

/** POST /v1/events (interface.md §4.1), idempotent with a key. */
export const createEvent = apiKeyProcedure
  .meta({
    scope: 'events:write',
    keyCheckedAtCommit: true,
    successStatus: 201,
    openapi: {
      method: 'POST',
      path: '/events',
      tags: ['events'],
      summary: 'Record one audit event',
      successDescription: 'The stored event (for a replayed Idempotency-Key, the one stored first)',
      ...IDEMPOTENCY_HEADERS,
      errorResponses: {
        400: 'Missing required fields, or an invalid field',
        401: 'Missing or invalid authorization header / Invalid API key',
        413: 'Body over 1 MiB',
        415: 'Content-Type is not application/json',
        422: 'IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was used for a different request',
        429: 'Monthly event limit reached',
      },
    },
  })
  .input(ZCreateEventRequest)
  .output(ZCreateEventOutput)
  .mutation(async ({ ctx, input }) => {
    // The body's idempotency_key is not an event field: the service reads only the event's fields from it.
    const { output, replayed } = await ctx.services.events.create(ctx.principal, input, idempotencyKeyOf(ctx, input.idempotency_key));
    ctx.answer.replayed = replayed;
    return output;
  });
