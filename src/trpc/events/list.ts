import { ZListEventsInput, ZListEventsOutput } from '../../domain/event';
import { apiKeyProcedure } from '../init';

/** GET /v1/events: filters, newest first, keyset cursor. */
export const listEvents = apiKeyProcedure
  .meta({
    scope: 'events:read',
    openapi: {
      method: 'GET',
      path: '/events',
      tags: ['events'],
      summary: 'List events, newest first',
      description: 'Follow next_cursor until has_more is false to read every matching event exactly once.',
      errorResponses: { 400: 'Invalid filter, limit or cursor', 401: 'Missing or invalid API key' },
    },
  })
  .input(ZListEventsInput)
  .output(ZListEventsOutput)
  .query(async ({ ctx, input }) => {
    const [page, removed] = await Promise.all([ctx.services.events.list(ctx.principal, input), ctx.services.retention.notice(ctx.principal.tenant)]);
    return removed ? { ...page, removed } : page;
  });
