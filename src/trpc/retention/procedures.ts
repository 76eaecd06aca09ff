/**
 * Retention under /v1 (and over tRPC) for an API key with `retention:manage`, which only an owner can
 * grant (domain/roles.ts `canGrant`): data-subject automation erases an actor's events, places and
 * releases legal holds, reads and sets the policy. The same service and schemas as the dashboard's
 * Retention page (../dashboard/retention.ts); every change is an entry of the organization's log whose
 * actor is the key. Every operation, reads too, needs `retention:manage`: the holds' reasons are legal
 * matters, and an `events:read` key learns what went from the lists' `removed` and the exports' header.
 */
import { ZEraseInput, ZEraseResult, ZHoldIdInput, ZHoldList, ZPlaceHoldInput, ZReleasedHold, ZRetentionHold, ZRetentionView, ZSetPolicyInput } from '../../domain/retention';
import { z } from 'zod';
import { apiKeyProcedure } from '../init';

const AUTH = { 401: 'Missing or invalid API key' };
const BODY = { 413: 'Body over 1 MiB', 415: 'Content-Type is not application/json' };

/** GET /v1/retention */
export const retentionPolicy = apiKeyProcedure
  .meta({
    scope: 'retention:manage',
    openapi: {
      method: 'GET', path: '/retention', tags: ['retention'], summary: 'The retention policy, any pending change, the installation\'s bounds, legal holds and what was removed',
      errorResponses: AUTH,
    },
  })
  .input(z.object({}))
  .output(ZRetentionView)
  .query(({ ctx }) => ctx.services.retention.view(ctx.principal.tenant));

/** PUT /v1/retention/policy */
export const setRetentionPolicy = apiKeyProcedure
  .meta({
    scope: 'retention:manage',
    openapi: {
      method: 'PUT', path: '/retention/policy', tags: ['retention'], summary: 'Set the retention policy (days an event is kept after it was received; null: for ever)',
      description: 'A shorter policy, or the first one, takes effect after the installation\'s notice period (the answer\'s `pending`); a longer one at once. Recorded as an audit_ledger.retention.policy_changed entry of the log.',
      errorResponses: { ...AUTH, 400: 'days outside the installation\'s bounds, or null where it keeps events for a limited time', ...BODY },
    },
  })
  .input(ZSetPolicyInput)
  .output(ZRetentionView)
  .mutation(({ ctx, input }) => ctx.services.retention.setPolicy(ctx.principal, input.days));

/** GET /v1/retention/holds */
export const listHolds = apiKeyProcedure
  .meta({ scope: 'retention:manage', openapi: { method: 'GET', path: '/retention/holds', tags: ['retention'], summary: 'The organization\'s legal holds', errorResponses: AUTH } })
  .input(z.object({}))
  .output(ZHoldList)
  .query(async ({ ctx }) => ({ data: (await ctx.services.retention.view(ctx.principal.tenant)).holds }));

/** POST /v1/retention/holds */
export const placeHold = apiKeyProcedure
  .meta({
    scope: 'retention:manage',
    openapi: {
      method: 'POST', path: '/retention/holds', tags: ['retention'], summary: 'Place a legal hold',
      description: 'Events matching every field of the filter are neither pruned nor erased until the hold is released; an empty filter holds the whole organization (erasure then answers 409 LEGAL_HOLD). Recorded as an audit_ledger.retention.hold_placed entry; placed_by is the key\'s id.',
      errorResponses: { ...AUTH, 400: 'Invalid filter or reason', ...BODY },
    },
    successStatus: 201,
  })
  .input(ZPlaceHoldInput)
  .output(ZRetentionHold)
  .mutation(async ({ ctx, input }) => (await ctx.services.retention.placeHold(ctx.principal, input.filter, input.reason)).hold);

/** DELETE /v1/retention/holds/{id} */
export const releaseHold = apiKeyProcedure
  .meta({
    scope: 'retention:manage',
    openapi: {
      method: 'DELETE', path: '/retention/holds/{id}', tags: ['retention'], summary: 'Release a legal hold',
      errorResponses: { ...AUTH, 400: 'Invalid hold id', 404: 'HOLD_NOT_FOUND: no such legal hold' },
    },
  })
  .input(ZHoldIdInput)
  .output(ZReleasedHold)
  .mutation(async ({ ctx, input }) => {
    await ctx.services.retention.releaseHold(ctx.principal, input.id);
    return { id: input.id, released: true as const };
  });

/** POST /v1/retention/erasures */
export const eraseEvents = apiKeyProcedure
  .meta({
    scope: 'retention:manage',
    openapi: {
      method: 'POST', path: '/retention/erasures', tags: ['retention'], summary: 'Erase an actor\'s events, or chosen events, with a reason code',
      description: 'Give either actor_id (every event of that actor) or event_ids. Held events stay (counted in `held`); the service\'s own entries are never erased. Recorded as audit_ledger.retention.erased entries (sequence ranges, count, reason, held; the key as actor), never the erased data; every remaining event keeps its proof, and verifiers accept the gap the entries explain.',
      errorResponses: { ...AUTH, 400: 'Neither or both of actor_id and event_ids, or an unknown reason', 409: 'LEGAL_HOLD: the whole organization is on hold; RETENTION_BUSY: a prune or erasure is running, retry', ...BODY },
    },
  })
  .input(ZEraseInput)
  .output(ZEraseResult)
  .mutation(({ ctx, input }) => ctx.services.retention.erase(ctx.principal, { actor_id: input.actor_id, event_ids: input.event_ids }, input.reason));
