/**
 * Receives the events another instance forwards to this one because this one writes their organization
 * (src/ingest/ingest.ts). Only instances on the same database know the token it checks. Every answer
 * but 200 means nothing was written, so the sender may write the events elsewhere.
 */
import coBody from 'co-body';
import type { Middleware } from 'koa';
import { FORWARD_MAX_BYTES, FORWARD_PATH, FORWARD_TOKEN_HEADER, type TForwardResponse, ZForwardRequest } from '../ingest/forwardWire';
import type { Ingest } from '../ingest/ingest';
import { toAppError } from '../trpc/errors';
import type { AppState } from './appState';

export function forwardRoute(ingest: Ingest): Middleware<AppState> {
  return async (ctx, next) => {
    if (ctx.path !== FORWARD_PATH) {
      await next();
      return;
    }
    const token = ctx.get(FORWARD_TOKEN_HEADER);
    if (ctx.method !== 'POST' || !token || !ingest.instances.acceptsToken(token)) {
      ctx.status = 404;
      return;
    }
    let request;
    try {
      const text = (await coBody.text(ctx.req, { limit: FORWARD_MAX_BYTES, encoding: 'utf8' })) as string;
      request = ZForwardRequest.safeParse(JSON.parse(text));
    } catch {
      request = undefined;
    }
    if (!request?.success) {
      ctx.status = 400;
      return;
    }
    const outcomes = await Promise.allSettled(request.data.writes.map((write) => ingest.writeForwarded(write.drafts, write.key_hash, write.cap_exempt)));
    const body: TForwardResponse = {
      results: outcomes.map((outcome) => {
        if (outcome.status === 'fulfilled') return { placements: outcome.value.map((doc) => ({ seq: doc.seq, month: doc.month, month_seq: doc.month_seq })) };
        const error = toAppError(outcome.reason);
        return { error: { code: error.code, message: error.message, ...(error.details.retryAfter === undefined ? {} : { retry_after: error.details.retryAfter }) } };
      }),
    };
    ctx.body = body;
  };
}
