/**
 * The Retention page: the policy, legal holds, erasure; each change is an entry of the organization's log.
 * The same service answers /v1/retention for API keys with `retention:manage` (../retention/procedures.ts).
 */
import { ZEraseInput, ZEraseResult, ZHoldIdInput, ZPlaceHoldInput, ZRetentionView, ZSetPolicyInput } from '../../domain/retention';
import { sessionProcedure } from '../init';

export const retentionView = sessionProcedure.meta({ permission: 'events:read' }).output(ZRetentionView).query(({ ctx }) => ctx.services.retention.view(ctx.principal.tenant));

export const setRetentionPolicy = sessionProcedure
  .meta({ permission: 'retention:manage' })
  .input(ZSetPolicyInput)
  .output(ZRetentionView)
  .mutation(({ ctx, input }) => ctx.services.retention.setPolicy(ctx.principal, input.days));

export const placeHold = sessionProcedure
  .meta({ permission: 'retention:manage' })
  .input(ZPlaceHoldInput)
  .output(ZRetentionView)
  .mutation(async ({ ctx, input }) => (await ctx.services.retention.placeHold(ctx.principal, input.filter, input.reason)).view);

export const releaseHold = sessionProcedure
  .meta({ permission: 'retention:manage' })
  .input(ZHoldIdInput)
  .output(ZRetentionView)
  .mutation(({ ctx, input }) => ctx.services.retention.releaseHold(ctx.principal, input.id));

export const eraseEvents = sessionProcedure
  .meta({ permission: 'retention:manage' })
  .input(ZEraseInput)
  .output(ZEraseResult)
  .mutation(({ ctx, input }) => ctx.services.retention.erase(ctx.principal, { actor_id: input.actor_id, event_ids: input.event_ids }, input.reason));
