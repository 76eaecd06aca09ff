import { ZEvent, ZGetEventInput } from '../../domain/event';
import { apiKeyProcedure } from '../init';

/** GET /v1/events/{id} (interface.md §4.2): the event itself, not wrapped. */
export const getEvent = apiKeyProcedure
  .meta({
    scope: 'events:read',
    openapi: {
      method: 'GET',
      path: '/events/{id}',
      tags: ['events'],
      summary: 'Read one event',
      errorResponses: { 401: 'Missing or invalid API key', 404: 'Event not found' },
    },
  })
  .input(ZGetEventInput)
  .output(ZEvent)
  .query(({ ctx, input }) => ctx.services.events.get(ctx.principal, input.id));
