import { ZEventFilters } from '../../domain/event';
import { toEvent } from '../../db/documents';
import { toEventQuery } from '../../services/events';
import { apiKeyProcedure } from '../init';

/**
 * Export for TypeScript clients: every matching event, streamed one by one from the database cursor
 * (use httpBatchStreamLink). REST clients use GET /v1/events/export, a plain Koa route (`http/exportRoute.ts`)
 * that serves JSON or CSV from the same reader; it is described in openapi.json by `http/openapiDocument.ts`.
 */
export const exportEvents = apiKeyProcedure.input(ZEventFilters).query(async function* ({ ctx, input, signal }) {
  const cursor = ctx.services.events.readerFor(ctx.principal).stream(toEventQuery(input));
  try {
    for await (const doc of cursor) {
      if (signal?.aborted) break;
      yield toEvent(doc);
    }
  } finally {
    await cursor.close();
  }
});
