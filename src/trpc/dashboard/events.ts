/** The events explorer: the same schemas and service as /v1's list and get, read with the session's organization. */
import { ZEvent, ZGetEventInput, ZListEventsInput, ZListEventsOutput } from '../../domain/event';
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
