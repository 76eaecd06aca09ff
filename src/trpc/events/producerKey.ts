/** PUT /v1/producer-key: the calling key binds itself to a producer key, before its first event. */
import { z } from 'zod';
import { ZProducerKey } from '../../services/apiKeys';
import { apiKeyProcedure } from '../init';

export const ZProducerBinding = z
  .object({
    api_key_id: z.string().meta({ description: 'The key bound: the one that made the request' }),
    producer_key: z.string().meta({ description: 'The producer key, in its one spelling: every later event of the key must carry its signature' }),
  })
  .meta({ id: 'ProducerBinding' });

export const bindProducerKey = apiKeyProcedure
  .meta({
    scope: 'events:write',
    openapi: {
      method: 'PUT',
      path: '/producer-key',
      tags: ['events'],
      summary: 'Bind this API key to a producer\'s Ed25519 key: from then on every event it sends must be signed by the producer (docs/trust-model.md, "Producer signatures")',
      successDescription: 'The binding (also recorded in the organization\'s log); the same binding again answers the same',
      errorResponses: {
        400: 'producer_key is not an Ed25519 verifier key whose key id matches',
        401: 'Missing or invalid API key',
        409: 'PRODUCER_KEY_CONFLICT: the key already has events, or another producer key',
      },
    },
  })
  .input(z.strictObject({ producer_key: ZProducerKey }))
  .output(ZProducerBinding)
  .mutation(({ ctx, input }) => ctx.services.keys.bindProducer(ctx.principal, ctx.principal.keyId, input.producer_key));
