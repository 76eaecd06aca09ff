/**
 * Receives the events another instance forwards to this one because this one writes their organization
 * (src/ingest/ingest.ts). Served only on the internal listener (INTERNAL_HOST, INTERNAL_PORT), never on
 * the public port, and only to a request that carries the installation's MAC of its body bound to this
 * instance (src/ingest/instanceAuth.ts); the answer carries the MAC of itself bound to the request's.
 * Every answer but 200 means nothing was written, so the sender may write the events elsewhere.
 */
import coBody from 'co-body';
import type { Middleware } from 'koa';
import { FORWARD_MAX_BYTES, FORWARD_PATH, INSTANCE_MAC_HEADER, parseWire, placementOf, type TForwardResponse, unitFromWire, ZForwardRequest } from '../ingest/forwardWire';
import type { Ingest } from '../ingest/ingest';
import { toAppError } from '../trpc/errors';

export function forwardRoute(ingest: Ingest): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== FORWARD_PATH || ctx.method !== 'POST') {
      await next();
      return;
    }
    const mac = ctx.get(INSTANCE_MAC_HEADER);
    let text: string;
    try {
      text = (await coBody.text(ctx.req, { limit: FORWARD_MAX_BYTES, encoding: 'utf8' })) as string;
    } catch {
      ctx.status = 400;
      return;
    }
    if (!ingest.auth.check(mac, 'forward', ingest.instances.self.id, text)) {
      ctx.status = 401;
      return;
    }
    const request = ZForwardRequest.safeParse(parseWire(text));
    if (!request.success) {
      ctx.status = 400;
      return;
    }
    const outcomes = await Promise.allSettled(request.data.writes.map((write) => ingest.writeForwarded(unitFromWire(write))));
    const body: TForwardResponse = {
      results: outcomes.map((outcome) => {
        if (outcome.status === 'fulfilled') return { placements: outcome.value.map(placementOf) };
        const error = toAppError(outcome.reason);
        return { error: { code: error.code, message: error.message, ...(error.details.retryAfter === undefined ? {} : { retry_after: error.details.retryAfter }) } };
      }),
    };
    const answer = JSON.stringify(body);
    ctx.set(INSTANCE_MAC_HEADER, ingest.auth.mac('answer', mac, answer));
    ctx.type = 'application/json';
    ctx.body = answer;
  };
}
