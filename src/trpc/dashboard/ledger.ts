/** The dashboard's ledger page: the verifier key and the newest checkpoint of the session's organization. */
import { ZLedgerSummary } from '../../domain/ledger/schemas';
import { sessionProcedure } from '../init';

export const ledgerSummary = sessionProcedure.output(ZLedgerSummary).query(({ ctx }) => ctx.services.ledgerReads.summary(ctx.principal));
