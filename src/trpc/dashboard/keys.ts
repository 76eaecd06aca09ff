/** The API Keys area: create (value shown once), list, revoke. */
import { ZCreateApiKeyInput, ZRevokeApiKeyInput } from '../../services/apiKeys';
import { sessionProcedure } from '../init';

export const listKeys = sessionProcedure.meta({ permission: 'keys:manage' }).query(({ ctx }) => ctx.services.keys.list(ctx.principal));

export const createKey = sessionProcedure.meta({ permission: 'keys:manage' }).input(ZCreateApiKeyInput).mutation(({ ctx, input }) => ctx.services.keys.create(ctx.principal, input.name, input.scopes));

export const revokeKey = sessionProcedure.meta({ permission: 'keys:revoke' }).input(ZRevokeApiKeyInput).mutation(({ ctx, input }) => ctx.services.keys.revoke(ctx.principal, input.id));
