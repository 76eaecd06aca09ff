import { ZCreateBatchOutput, ZCreateBatchRequest } from '../../domain/event';
import { apiKeyProcedure } from '../init';
import { IDEMPOTENCY_HEADERS, idempotencyKeyOf } from './idempotencyKey';

/** POST /v1/events/batch: many events, stored all or none toward the caller, in order. */
export const createEventBatch = apiKeyProcedure
  .meta({
    successStatus: 201,
    openapi: {
      method: 'POST',
      path: '/events/batch',
      tags: ['events'],
      summary: 'Record many audit events at once',
      description: 'All or none: an invalid event, or a monthly cap that cannot take them all, stores none. With an Idempotency-Key, a retry after a failure stores exactly what is missing.',
      successDescription: 'The stored events, in request order',
      ...IDEMPOTENCY_HEADERS,
      errorResponses: {
        400: 'Missing required fields, or an invalid field (fields name each event, e.g. events[3].actor.id)',
        401: 'Missing or invalid authorization header / Invalid API key',
        413: 'Body over BATCH_MAX_BYTES (default 5 MiB)',
        415: 'Content-Type is not application/json',
        422: 'IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was used for a different request',
        429: 'Monthly event limit reached: the cap cannot take all of the events',
      },
    },
  })
  .input(ZCreateBatchRequest)
  .output(ZCreateBatchOutput)
  .mutation(async ({ ctx, input }) => {
    const { output, replayed } = await ctx.services.events.createBatch(ctx.principal, input.events, idempotencyKeyOf(ctx, input.idempotency_key));
    ctx.answer.replayed = replayed;
    return output;
  });
