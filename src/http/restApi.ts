/**
 * /v1: the router's procedures as REST through trpc-to-openapi's node handler.
 *
 * The adapter would write its own error bodies (tRPC codes, "Input validation failed", stacks in
 * development), so it is given a response that records instead of sending, and the answer is written
 * by Koa: successes as the adapter rendered them, errors through `toErrorBody` like every other route.
 * The body is parsed here rather than by the adapter, which ignores `application/json; charset=utf-8`.
 */
import { bodyParser } from '@koa/bodyparser';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Middleware } from 'koa';
import { createOpenApiNodeHttpHandler } from 'trpc-to-openapi';
import { AppError } from '../domain/errors';
import { LIMITS } from '../domain/event';
import { unknownFieldsError } from '../domain/validation';
import type { Services } from '../services/container';
import { createContext } from '../trpc/context';
import { toClientError } from '../trpc/init';
import { appRouter } from '../trpc/router';
import type { AppState } from './appState';
import { sendError } from './errorHandling';

export const REST_PREFIX = '/v1';

/** Status codes other than 200 for successful calls, by procedure path. */
export const SUCCESS_STATUS: Record<string, number> = { 'events.create': 201 };

interface Recorded {
  status: number;
  headers: Map<string, string>;
  body: string | undefined;
}

/** A view of `res` that keeps status, headers and body to itself; events and the socket stay real. */
function recordingResponse(res: ServerResponse): { res: ServerResponse; recorded: Recorded } {
  const recorded: Recorded = { status: 200, headers: new Map(), body: undefined };
  const proxy: ServerResponse = new Proxy(res, {
    get(target, prop) {
      if (prop === 'statusCode') return recorded.status;
      if (prop === 'setHeader') {
        return (name: string, value: unknown) => {
          recorded.headers.set(name.toLowerCase(), String(value));
          return proxy;
        };
      }
      if (prop === 'end') {
        return (chunk?: unknown) => {
          recorded.body = typeof chunk === 'string' ? chunk : undefined;
          return proxy;
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
    set(target, prop, value) {
      if (prop === 'statusCode') {
        recorded.status = Number(value);
        return true;
      }
      return Reflect.set(target, prop, value, target);
    },
  });
  return { res: proxy, recorded };
}

export function restApi(services: Services): Middleware<AppState> {
  const failures = new WeakMap<IncomingMessage, unknown>();
  const requestIds = new WeakMap<IncomingMessage, string>();
  const handler = createOpenApiNodeHttpHandler({
    router: appRouter,
    createContext: ({ req, info }) => createContext(services, req, requestIds.get(req) ?? '', info.type),
    responseMeta: ({ paths, errors }) => {
      const status = errors.length === 0 && paths?.length === 1 ? SUCCESS_STATUS[paths[0] ?? ''] : undefined;
      return status ? { status } : {};
    },
    onError: ({ error, req }) => failures.set(req, error),
  });

  const parseBody = bodyParser({
    enableTypes: ['json'],
    jsonLimit: LIMITS.bodyBytes,
    jsonStrict: false,
    patchNode: true,
  });

  return async (ctx, next) => {
    if (ctx.path !== REST_PREFIX && !ctx.path.startsWith(`${REST_PREFIX}/`)) return next();

    if (['POST', 'PUT', 'PATCH'].includes(ctx.method)) {
      if (!ctx.is('application/json')) {
        return sendError(ctx, new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json'));
      }
      await parseBody(ctx, async () => undefined);
      const body: unknown = ctx.request.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        return sendError(ctx, new AppError('VALIDATION_FAILED', 'Request body must be a JSON object'));
      }
      // The adapter turns the request into a fetch Request only to get an abort signal, and for that
      // serializes the parsed body again with JSON.stringify (tRPC's incomingMessageToRequest). Nobody
      // reads that copy: a hidden toJSON makes it two bytes instead of the whole body, which saves CPU
      // on every create and keeps a deeply nested body from overflowing the stack before validation.
      // Non-enumerable, so neither the adapter's Object.assign nor the schema ever sees it.
      Object.defineProperty(body, 'toJSON', { value: () => '', enumerable: false });
    }

    // trpc-to-openapi gathers query parameters in a plain `{}` (getQuery in its node-http/input.ts), so a
    // name Object.prototype already has (`toString`, `__proto__`) makes it throw or vanish. No field of ours
    // has such a name: it is refused as the unknown parameter it is, before the adapter sees it.
    const inherited = Object.keys(ctx.query).filter((name) => name in Object.prototype);
    if (inherited.length) return sendError(ctx, unknownFieldsError(inherited));

    requestIds.set(ctx.req, ctx.state.requestId);
    let matched = true;
    const { res, recorded } = recordingResponse(ctx.res);
    const original = ctx.req.url;
    ctx.req.url = (original ?? '/').slice(REST_PREFIX.length) || '/';
    try {
      await handler(ctx.req, res, () => {
        matched = false;
      });
    } finally {
      ctx.req.url = original;
    }
    if (!matched) return next();

    const failure = failures.get(ctx.req);
    if (failure !== undefined) return sendError(ctx, toClientError(failure));
    ctx.status = recorded.status;
    ctx.body = recorded.body ?? '';
    ctx.type = 'application/json';
  };
}

