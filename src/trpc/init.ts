/**
 * tRPC set-up: meta, error formatting and the base procedures. Every error leaving a procedure is an
 * AppError by the time it reaches a client, whichever surface (REST or /trpc) it uses (`./errors.ts`).
 */
import { createHash } from 'node:crypto';
import { getTRPCErrorFromUnknown, initTRPC, TRPCError } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { ACCOUNT_MESSAGES, AppError, ERROR_CODES, MESSAGES } from '../domain/errors';
import type { ApiKeyPrincipal, SessionPrincipal, ViewerPrincipal } from '../services/auth';
import { can, type Permission } from '../domain/roles';
import type { Scope } from '../domain/apiKey';
import type { Context, WebContext } from './context';
import { toAppError } from './errors';

/** A procedure's meta: trpc-to-openapi's, and the status of a REST success when it is not 200. */
export type ProcedureMeta = OpenApiMeta & {
  successStatus?: number;
  /** What an API key needs to call it (every API-key procedure names one). */
  scope?: Scope;
  /**
   * The event writes: the group-commit writer checks the key again right before storing, so a key found
   * active lately may authenticate them (services/auth.ts). Every other mutation looks its key up.
   */
  keyCheckedAtCommit?: true;
  /** What a member's role needs to call it (every session procedure names one: domain/roles.ts). */
  permission?: Permission;
};

const t = initTRPC
  .context<Context>()
  .meta<ProcedureMeta>()
  .create({
    // Never send stacks, whatever NODE_ENV says.
    isDev: false,
    errorFormatter({ shape, error }) {
      const app = toAppError(error);
      return {
        message: app.message,
        code: shape.code,
        data: {
          code: ERROR_CODES[app.code].trpc,
          appCode: app.code,
          httpStatus: app.status,
          path: shape.data.path,
          fields: app.details.fields,
          ...(app.details.sessionEnded ? { sessionEnded: app.details.sessionEnded } : {}),
        },
      };
    },
  });

export const router = t.router;

/** An error as a TRPCError whose code gives the AppError's HTTP status on /trpc, with the AppError as cause for the REST adapter. */
function rethrown(error: unknown): never {
  const app = toAppError(error);
  throw new TRPCError({ code: ERROR_CODES[app.code].trpc, message: app.message, cause: app });
}

/** Re-throws whatever the procedure (including its input parser) threw, `rethrown`. */
const mapErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (result.ok) return result;
  return rethrown(result.error);
});

export const publicProcedure = t.procedure.use(mapErrors);

/**
 * Requires an API key. Writes and reads answer with different texts, as the spec's table says:
 * creation distinguishes a missing header from a bad key, every read says "Missing or invalid API key".
 * It maps errors as `mapErrors` does, itself: one middleware less on the path of every event (tRPC copies
 * a call's options twice for each).
 */
export const apiKeyProcedure = t.procedure.use(async ({ ctx, type, meta, next }) => {
  let principal: ApiKeyPrincipal;
  try {
    // A revoked key must not create a stream, erase or hold events in the minute the write shortcut lasts.
    const auth = ctx.auth.kind === 'ok' && !ctx.auth.fresh && !meta?.keyCheckedAtCommit ? await ctx.authenticateNow() : ctx.auth;
    if (auth.kind !== 'ok') throw authError(auth.kind, type === 'mutation' ? 'write' : 'read');
    principal = auth.principal;
    requireScope(principal, meta?.scope);
  } catch (error) {
    return rethrown(getTRPCErrorFromUnknown(error));
  }
  // tRPC merges what `next` is given into the context.
  const result = await next({ ctx: { principal } });
  if (result.ok) return result;
  return rethrown(result.error);
});

/** 403 unless the key has `scope`; a procedure that names none is refused to every key (a mistake of ours, caught by the OpenAPI test). */
export function requireScope(principal: ApiKeyPrincipal, scope: Scope | undefined): void {
  if (scope === undefined) throw new AppError('INSUFFICIENT_SCOPE', 'This operation is not open to API keys');
  if (!principal.scopes.includes(scope)) throw new AppError('INSUFFICIENT_SCOPE', `This API key lacks the scope ${scope}`);
}

/** Procedures for a browser (sign-up, sign-in): only on /trpc, where there is a cookie jar. */
export const webProcedure = publicProcedure.use(({ ctx, next }) => {
  if (!ctx.web) throw new AppError('NOT_FOUND', 'Not found');
  const web: WebContext = ctx.web;
  return next({ ctx: { ...ctx, web } });
});

/**
 * For the account procedures: one call per request, so a batch cannot multiply sign-in attempts or
 * sign-ups behind one request, nor mix a session change with other calls.
 */
export const unbatched = t.middleware(({ ctx, next }) => {
  if (ctx.web?.batched) throw new AppError('VALIDATION_FAILED', 'Account procedures cannot be called in a batch; send each on its own');
  return next();
});

/**
 * The dashboard's procedures: a signed-in session, never an API key (and API-key procedures never take a
 * session), at most as many calls per session as an API key may make requests.
 */
export const sessionProcedure = webProcedure.use(async ({ ctx, meta, next }) => {
  const principal: SessionPrincipal | null = await ctx.services.accounts.authenticate(ctx.web.cookies.token);
  if (!principal) {
    // Same code and message as any ended session; a removed member's dashboard is also told why.
    const ended = await ctx.services.members.sessionEnd(ctx.web.cookies.token);
    throw new AppError('NOT_SIGNED_IN', ACCOUNT_MESSAGES.notSignedIn, ended ? { sessionEnded: ended } : {});
  }
  requirePermission(principal, meta?.permission);
  const verdict = ctx.services.sessionRate.take(principal.sessionHash, ctx.services.clock.now().getTime());
  if (!verdict.allowed) {
    throw new AppError('RATE_LIMITED', `Too many requests for this session; retry after ${verdict.retryAfter} s`, { retryAfter: verdict.retryAfter });
  }
  return next({ ctx: { ...ctx, principal } });
});

/** 403 unless the member's role has `permission` (ROLE_PERMISSIONS); a procedure that names none is refused to everyone. */
export function requirePermission(principal: SessionPrincipal, permission: Permission | undefined): void {
  if (permission === undefined) throw new AppError('INSUFFICIENT_ROLE', 'This operation is not open to dashboard sessions');
  if (!can(principal.role, permission)) throw new AppError('INSUFFICIENT_ROLE', `Your role (${principal.role}) does not allow this`);
}

/**
 * The hosted viewer's procedures: a viewer token in `Authorization: Bearer`, never an API key or a
 * session; everything it reads is narrowed to the token's part of the organization (services/events.ts).
 */
export const viewerProcedure = publicProcedure.use(async ({ ctx, next }) => {
  // At the rate a key or a session gets, per token, counted before the token is checked (which reads its key).
  const verdict = ctx.services.sessionRate.take(`viewer:${createHash('sha256').update(ctx.bearer ?? '').digest('hex')}`, ctx.services.clock.now().getTime());
  if (!verdict.allowed) throw new AppError('RATE_LIMITED', `Too many requests for this viewer token; retry after ${verdict.retryAfter} s`, { retryAfter: verdict.retryAfter });
  const principal: ViewerPrincipal = await ctx.services.viewerTokens.verify(ctx.bearer);
  return next({ ctx: { ...ctx, principal } });
});

export function authError(found: 'missing' | 'invalid', style: 'write' | 'read'): AppError {
  if (style === 'read') return new AppError(found === 'missing' ? 'MISSING_AUTHORIZATION' : 'INVALID_API_KEY', MESSAGES.missingOrInvalidApiKey);
  return found === 'missing'
    ? new AppError('MISSING_AUTHORIZATION', MESSAGES.missingAuthorizationHeader)
    : new AppError('INVALID_API_KEY', MESSAGES.invalidApiKey);
}
