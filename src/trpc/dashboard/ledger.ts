/** The dashboard's ledger: the summary page, and the proofs the browser verifies itself (same service as /v1's). */
import { ZConsistencyInput, ZConsistencyProof, ZInclusionProof, ZLedgerSummary, ZProofInput } from '../../domain/ledger/schemas';
import { sessionProcedure } from '../init';

export const ledgerSummary = sessionProcedure.output(ZLedgerSummary).query(({ ctx }) => ctx.services.ledgerReads.summary(ctx.principal));

export const sessionEventProof = sessionProcedure
  .input(ZProofInput)
  .output(ZInclusionProof)
  .query(({ ctx, input }) => ctx.services.ledgerReads.proof(ctx.principal, input.id, input.tree_size));

export const sessionConsistency = sessionProcedure
  .input(ZConsistencyInput)
  .output(ZConsistencyProof)
  .query(({ ctx, input }) => ctx.services.ledgerReads.consistency(ctx.principal, input.from, input.to));
