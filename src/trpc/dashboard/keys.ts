/** The API Keys area: create (value shown once), list, revoke, bind to a producer key. */
import { ZBindProducerKeyInput, ZCreateApiKeyInput, ZRevokeApiKeyInput } from '../../services/apiKeys';
import { sessionProcedure } from '../init';

export const listKeys = sessionProcedure.meta({ permission: 'keys:manage' }).query(({ ctx }) => ctx.services.keys.list(ctx.principal));

export const createKey = sessionProcedure.meta({ permission: 'keys:manage' }).input(ZCreateApiKeyInput).mutation(({ ctx, input }) => ctx.services.keys.create(ctx.principal, input.name, input.scopes));

export const revokeKey = sessionProcedure.meta({ permission: 'keys:revoke' }).input(ZRevokeApiKeyInput).mutation(({ ctx, input }) => ctx.services.keys.revoke(ctx.principal, input.id));

/** Binds a key to a producer's Ed25519 key, before the key's first event (services/producerKeys.ts). */
export const bindProducerKey = sessionProcedure.meta({ permission: 'keys:manage' }).input(ZBindProducerKeyInput).mutation(({ ctx, input }) => ctx.services.keys.bindProducer(ctx.principal, input.id, input.producer_key));
