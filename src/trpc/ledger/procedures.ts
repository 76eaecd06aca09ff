/** The ledger under /v1 and over tRPC: the key, checkpoints and proofs of the caller's organization. */
import { z } from 'zod';
import { ZCheckpoint, ZCheckpointInput, ZConsistencyInput, ZConsistencyProof, ZInclusionProof, ZLedgerKey, ZProofInput } from '../../domain/ledger/schemas';
import { apiKeyProcedure } from '../init';

const AUTH = { 401: 'Missing or invalid API key' };

/** GET /v1/ledger/key */
export const ledgerKey = apiKeyProcedure
  .meta({ scope: 'ledger:read', openapi: { method: 'GET', path: '/ledger/key', tags: ['ledger'], summary: 'The verifier key that signs every checkpoint', errorResponses: AUTH } })
  .input(z.object({}))
  .output(ZLedgerKey)
  .query(({ ctx }) => ctx.services.ledgerReads.key());

/** GET /v1/ledger/checkpoint */
export const ledgerCheckpoint = apiKeyProcedure
  .meta({
    scope: 'ledger:read',
    openapi: {
      method: 'GET', path: '/ledger/checkpoint', tags: ['ledger'],
      summary: 'The newest signed checkpoint of the organization\'s log, with its inclusion in the witnessed installation log',
      errorResponses: { ...AUTH, 400: 'installation_size does not include the checkpoint', 404: 'No checkpoint yet (no events), or no installation checkpoint of that size' },
    },
  })
  .input(ZCheckpointInput)
  .output(ZCheckpoint)
  .query(({ ctx, input }) => ctx.services.ledgerReads.checkpoint(ctx.principal, input.installation_size));

/** GET /v1/events/{id}/proof */
export const eventProof = apiKeyProcedure
  .meta({
    scope: 'ledger:read',
    openapi: {
      method: 'GET', path: '/events/{id}/proof', tags: ['ledger'], summary: 'The inclusion proof of one event, with the checkpoint it verifies against',
      errorResponses: { ...AUTH, 400: 'tree_size does not include the event', 404: 'Event not found, or no checkpoint of that size' },
    },
  })
  .input(ZProofInput)
  .output(ZInclusionProof)
  .query(({ ctx, input }) => ctx.services.ledgerReads.proof(ctx.principal, input.id, input.tree_size));

/** GET /v1/ledger/consistency */
export const ledgerConsistency = apiKeyProcedure
  .meta({
    scope: 'ledger:read',
    openapi: {
      method: 'GET', path: '/ledger/consistency', tags: ['ledger'], summary: 'The consistency proof between two tree sizes of the organization\'s log',
      errorResponses: { ...AUTH, 400: 'from is larger than to', 404: 'No checkpoint of size `to`' },
    },
  })
  .input(ZConsistencyInput)
  .output(ZConsistencyProof)
  .query(({ ctx, input }) => ctx.services.ledgerReads.consistency(ctx.principal, input.from, input.to));
