/** The dashboard's ledger: the summary page, and the proofs the browser verifies itself (same service as /v1's). */
import { ZConsistencyInput, ZConsistencyProof, ZInclusionProof, ZLedgerSummary, ZProofInput } from '../../domain/ledger/schemas';
import { sessionProcedure } from '../init';

export const ledgerSummary = sessionProcedure.meta({ permission: 'ledger:read' }).output(ZLedgerSummary).query(({ ctx }) => ctx.services.ledgerReads.summary(ctx.principal));

export const sessionEventProof = sessionProcedure
  .meta({ permission: 'ledger:verify' })
  .input(ZProofInput)
  .output(ZInclusionProof)
  .query(({ ctx, input }) => ctx.services.ledgerReads.proof(ctx.principal, input.id, input.tree_size));

export const sessionConsistency = sessionProcedure
  .meta({ permission: 'ledger:verify' })
  .input(ZConsistencyInput)
  .output(ZConsistencyProof)
  .query(({ ctx, input }) => ctx.services.ledgerReads.consistency(ctx.principal, input.from, input.to));
