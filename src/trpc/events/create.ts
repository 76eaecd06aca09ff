import { ZCreateEventInput, ZCreateEventOutput } from '../../domain/event';
import { apiKeyProcedure } from '../init';

/** POST /v1/events (interface.md §4.1). */
export const createEvent = apiKeyProcedure
  .meta({
    successStatus: 201,
    openapi: {
      method: 'POST',
      path: '/events',
      tags: ['events'],
      summary: 'Record one audit event',
      successDescription: 'The stored event',
      errorResponses: { 400: 'Missing required fields, or an invalid field', 401: 'Missing or invalid authorization header / Invalid API key', 413: 'Body over 1 MiB', 415: 'Content-Type is not application/json', 429: 'Monthly event limit reached' },
    },
  })
  .input(ZCreateEventInput)
  .output(ZCreateEventOutput)
  .mutation(({ ctx, input }) => ctx.services.events.create(ctx.principal, input));
