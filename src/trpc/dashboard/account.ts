/** Sign-up, sign-in, sign-out and "who am I": the dashboard's session lifecycle. */
import { z } from 'zod';
import { ZAccountView, ZLoginInput, ZSignupInput } from '../../domain/account';
import { sessionProcedure, webProcedure } from '../init';

/** Creates the account and its free-plan organization, and signs in. */
export const signup = webProcedure
  .input(ZSignupInput)
  .output(ZAccountView)
  .mutation(async ({ ctx, input }) => {
    const started = await ctx.services.accounts.signup(input, ctx.web.clientAddress);
    await ctx.services.accounts.endSessionOf(ctx.web.cookies.token);
    ctx.web.cookies.set(started.token, started.expiresAt);
    return started.view;
  });

/** Signs in with a new session; any session the browser held before is ended (rotation). */
export const login = webProcedure
  .input(ZLoginInput)
  .output(ZAccountView)
  .mutation(async ({ ctx, input }) => {
    const started = await ctx.services.accounts.login(input, ctx.web.clientAddress);
    await ctx.services.accounts.endSessionOf(ctx.web.cookies.token);
    ctx.web.cookies.set(started.token, started.expiresAt);
    return started.view;
  });

/** Ends the session on the server and clears the cookie. */
export const logout = sessionProcedure.output(z.object({ success: z.literal(true) })).mutation(async ({ ctx }) => {
  await ctx.services.accounts.logout(ctx.principal);
  ctx.web.cookies.clear();
  return { success: true as const };
});

/** The signed-in account and organization, or null: the dashboard asks this first. */
export const me = webProcedure.output(ZAccountView.nullable()).query(async ({ ctx }) => {
  const principal = await ctx.services.accounts.authenticate(ctx.web.cookies.token);
  return principal ? ctx.services.accounts.view(principal) : null;
});
