/** The Idempotency-Key of a write: the header (REST) or the input field (tRPC clients, which share one request per batch of calls). */
import { z } from 'zod';
import { AppError } from '../../domain/errors';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, ZIdempotencyKey } from '../../domain/event';
import type { Context } from '../context';

/** For openapi.json: the header a write takes and the one its success may carry. */
export const IDEMPOTENCY_HEADERS = {
  requestHeaders: z.object({ [IDEMPOTENCY_KEY_HEADER]: ZIdempotencyKey.optional() }),
  responseHeaders: z.object({
    [IDEMPOTENT_REPLAYED_HEADER]: z.literal('true').optional().meta({ description: 'Present when every event in the answer was stored by an earlier request with the same Idempotency-Key' }),
  }),
};

export function idempotencyKeyOf(ctx: Context, field: string | undefined): string | undefined {
  const header = ctx.idempotencyKeyHeader;
  if (header !== undefined && !ZIdempotencyKey.safeParse(header).success) {
    throw new AppError('VALIDATION_FAILED', `Invalid request: the ${IDEMPOTENCY_KEY_HEADER} header must be 1 to 255 printable ASCII characters`, { fields: [IDEMPOTENCY_KEY_HEADER] });
  }
  if (header !== undefined && field !== undefined && header !== field) {
    throw new AppError('VALIDATION_FAILED', `Invalid request: the ${IDEMPOTENCY_KEY_HEADER} header and idempotency_key must be the same`, { fields: [IDEMPOTENCY_KEY_HEADER, 'idempotency_key'] });
  }
  return header ?? field;
}
