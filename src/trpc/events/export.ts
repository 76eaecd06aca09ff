import { ZEventFilters } from '../../domain/event';
import { type EventDoc, toEvent } from '../../db/documents';
import { apiKeyProcedure } from '../init';

/**
 * Export for TypeScript clients: every matching event, streamed one by one from the database cursor
 * (use httpBatchStreamLink). REST clients use GET /v1/events/export, a plain Koa route (`http/exportRoute.ts`)
 * that serves JSON or CSV from the same reader; it is described in openapi.json by `http/openapiDocument.ts`.
 */
export const exportEvents = apiKeyProcedure.meta({ scope: 'events:read' }).input(ZEventFilters).query(async function* ({ ctx, input, signal }) {
  // Leaving the loop, however it happens, destroys the stream, which closes the cursor and frees the slot.
  for await (const doc of (await ctx.services.events.export(ctx.principal, input)).docs) {
    if (signal?.aborted) break;
    yield toEvent(doc as EventDoc);
  }
});
