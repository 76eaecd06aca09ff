/** The usage page: this month against the cap, and events per day. */
import { ZUsageSummary } from '../../domain/usage';
import { sessionProcedure } from '../init';

export const usageSummary = sessionProcedure.meta({ permission: 'events:read' }).output(ZUsageSummary).query(({ ctx }) => ctx.services.usage.summary(ctx.principal));
