/**
 * Viewer tokens: minted under /v1 with an `events:read` key (the application's server), and the hosted
 * viewer's procedures on /trpc, which take the token and nothing else. Every read goes through the same
 * services as the dashboard's, with the viewer as principal, so the token's limits apply in one place
 * (services/events.ts: `queryFor`, `visibleTo`).
 */
import { ZEvent, ZGetEventInput, ZListEventsInput, ZListEventsOutput } from '../../domain/event';
import { ZInclusionProof, ZLedgerKey } from '../../domain/ledger/schemas';
import { ZMintViewerTokenInput, ZViewerScope, ZViewerToken } from '../../domain/viewerToken';
import { z } from 'zod';
import { apiKeyProcedure, router, viewerProcedure } from '../init';

/** POST /v1/viewer-tokens */
export const mintViewerToken = apiKeyProcedure
  .meta({
    scope: 'events:read',
    openapi: {
      method: 'POST', path: '/viewer-tokens', tags: ['viewer'],
      summary: 'Mint a short-lived viewer token for one of your customers',
      description: 'The token shows only events whose organization_id is the one given (and, if given, only those actions) in the hosted viewer at /viewer?token=…, which may be embedded in an iframe. It is a signed JWT, not stored; it ends at expires_at or when the key that minted it is revoked.',
      errorResponses: { 401: 'Missing or invalid API key', 400: 'Invalid organization_id, actions or expires_in_minutes', 413: 'Body over 1 MiB', 415: 'Content-Type is not application/json', 503: 'This process holds no signing key' },
    },
    successStatus: 201,
  })
  .input(ZMintViewerTokenInput)
  .output(ZViewerToken)
  .mutation(({ ctx, input }) => ctx.services.viewerTokens.mint(ctx.principal, input));

/** What the hosted viewer calls, with the token as its bearer. */
export const viewerRouter = router({
  scope: viewerProcedure.output(ZViewerScope).query(({ ctx }) => ({
    organization_id: ctx.principal.eventOrganizationId,
    actions: ctx.principal.actions ? [...ctx.principal.actions] : null,
    expires_at: ctx.principal.expiresAt.toISOString(),
  })),
  events: router({
    list: viewerProcedure.input(ZListEventsInput).output(ZListEventsOutput).query(({ ctx, input }) => ctx.services.events.list(ctx.principal, input)),
    get: viewerProcedure.input(ZGetEventInput).output(ZEvent).query(({ ctx, input }) => ctx.services.events.get(ctx.principal, input.id)),
    proof: viewerProcedure.input(z.strictObject({ id: z.string().max(64) })).output(ZInclusionProof).query(({ ctx, input }) => ctx.services.ledgerReads.proof(ctx.principal, input.id, undefined)),
  }),
  /** The key the proofs' checkpoints are signed with (public). */
  key: viewerProcedure.output(ZLedgerKey).query(({ ctx }) => ctx.services.ledgerReads.key()),
});
