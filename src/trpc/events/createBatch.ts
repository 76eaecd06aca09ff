import { ZCreateBatchOutput, ZCreateBatchRequest } from '../../domain/event';
import { tooManyEvents } from '../../services/events';
import { apiKeyProcedure } from '../init';
import { IDEMPOTENCY_HEADERS, idempotencyKeyOf } from './idempotencyKey';

/**
 * The count is checked before the input is validated: a 5 MB body of 2.5 million invalid items must be
 * refused for its length at once, not validated (and reported) item by item.
 */
const countedFirst = apiKeyProcedure.use(async ({ ctx, getRawInput, next }) => {
  const raw = await getRawInput();
  const events = typeof raw === 'object' && raw !== null ? (raw as { events?: unknown }).events : undefined;
  if (Array.isArray(events) && events.length > ctx.services.limits.batchEvents) throw tooManyEvents(ctx.services.limits.batchEvents);
  return next();
});

/** POST /v1/events/batch: many events, stored all or none toward the caller, in order. */
export const createEventBatch = countedFirst
  .meta({
    scope: 'events:write',
    keyCheckedAtCommit: true,
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
