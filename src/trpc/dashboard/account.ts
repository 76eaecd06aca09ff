/** Sign-up, sign-in, sign-out and "who am I": the dashboard's session lifecycle. */
import { z } from 'zod';
import { type TAccountView, ZAccountView, ZLoginInput, ZSignupInput } from '../../domain/account';
import { ZAcceptInput, ZInvitationPreview, ZInvitationToken } from '../../domain/roles';
import type { StartedSession } from '../../services/accounts';
import type { ApiServices } from '../../services/container';
import type { WebContext } from '../context';
import { sessionProcedure, unbatched, webProcedure } from '../init';

const accountProcedure = webProcedure.use(unbatched);

/** Hands a new session to the browser; the one it held before, if any, is ended (rotation). */
async function handOver(ctx: { services: ApiServices; web: WebContext }, started: StartedSession): Promise<TAccountView> {
  await ctx.services.accounts.endSessionOf(ctx.web.cookies.token);
  ctx.web.cookies.set(started.token, started.expiresAt);
  return started.view;
}

/** Creates the account and its free-plan organization, and signs in. */
export const signup = accountProcedure
  .input(ZSignupInput)
  .output(ZAccountView)
  .mutation(async ({ ctx, input }) => handOver(ctx, await ctx.services.accounts.signup(input, ctx.web.clientAddress)));

/** Signs in with a new session. */
export const login = accountProcedure
  .input(ZLoginInput)
  .output(ZAccountView)
  .mutation(async ({ ctx, input }) => handOver(ctx, await ctx.services.accounts.login(input, ctx.web.clientAddress)));

/** Ends the session on the server and clears the cookie. */
export const logout = sessionProcedure.meta({ permission: 'signedIn' }).use(unbatched).output(z.object({ success: z.literal(true) })).mutation(async ({ ctx }) => {
  await ctx.services.accounts.logout(ctx.principal);
  ctx.web.cookies.clear();
  return { success: true as const };
});

/** The signed-in account and organization, or null: the dashboard asks this first. */
export const me = accountProcedure.output(ZAccountView.nullable()).query(async ({ ctx }) => {
  const principal = await ctx.services.accounts.authenticate(ctx.web.cookies.token);
  return principal ? ctx.services.accounts.view(principal) : null;
});

/** Moves the session to another of the account's organizations (a new session; the old one ends). */
export const switchOrganization = sessionProcedure
  .meta({ permission: 'signedIn' })
  .use(unbatched)
  .input(z.strictObject({ organization_id: z.string().max(64) }))
  .output(ZAccountView)
  .mutation(async ({ ctx, input }) => handOver(ctx, await ctx.services.accounts.switchTo(ctx.principal, input.organization_id)));

/** What an invitation link offers, before accepting (no session needed: the link is the secret). */
export const invitation = accountProcedure
  .input(z.strictObject({ token: ZInvitationToken }))
  .output(ZInvitationPreview)
  .query(({ ctx, input }) => ctx.services.members.preview(input.token));

/**
 * Accepts an invitation: signed in as the invited email, or with that account's password, or (no account
 * yet) choosing one; then signed in to the organization.
 */
export const acceptInvitation = accountProcedure
  .input(ZAcceptInput)
  .output(ZAccountView)
  .mutation(async ({ ctx, input }) => {
    const session = await ctx.services.accounts.authenticate(ctx.web.cookies.token);
    return handOver(ctx, await ctx.services.members.accept(input.token, { session, password: input.password, address: ctx.web.clientAddress }));
  });
