/** The response header of a write answered with events an earlier request with the same Idempotency-Key stored. */
import { IDEMPOTENT_REPLAYED_HEADER } from '../domain/event';
import type { Context } from '../trpc/context';

export function replayedHeaders(ctx: Context | undefined): Record<string, string> {
  return ctx?.answer.replayed ? { [IDEMPOTENT_REPLAYED_HEADER]: 'true' } : {};
}
