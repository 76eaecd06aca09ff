/** The Members page: the member list and pending invitations, inviting, changing roles, removing, leaving. */
import { z } from 'zod';
import { ZAccountIdInput, ZChangeRoleInput, ZCreatedInvitation, ZInvitationIdInput, ZInviteInput, ZMember, ZMembersView } from '../../domain/roles';
import { sessionProcedure, unbatched } from '../init';

const ZRemoved = z.object({ removed: z.literal(true) });

export const listMembers = sessionProcedure.meta({ permission: 'members:read' }).output(ZMembersView).query(({ ctx }) => ctx.services.members.list(ctx.principal));

export const inviteMember = sessionProcedure
  .meta({ permission: 'members:manage' })
  .input(ZInviteInput)
  .output(ZCreatedInvitation)
  .mutation(({ ctx, input }) => ctx.services.members.invite(ctx.principal, input.email, input.role));

export const revokeInvitation = sessionProcedure
  .meta({ permission: 'members:manage' })
  .input(ZInvitationIdInput)
  .output(z.object({ revoked: z.literal(true) }))
  .mutation(({ ctx, input }) => ctx.services.members.revokeInvitation(ctx.principal, input.id));

export const changeRole = sessionProcedure
  .meta({ permission: 'members:manage' })
  .input(ZChangeRoleInput)
  .output(ZMember)
  .mutation(({ ctx, input }) => ctx.services.members.changeRole(ctx.principal, input.account_id, input.role));

export const removeMember = sessionProcedure
  .meta({ permission: 'members:manage' })
  .input(ZAccountIdInput)
  .output(ZRemoved)
  .mutation(({ ctx, input }) => ctx.services.members.remove(ctx.principal, input.account_id));

/** Leaves the organization (any role; not the last owner): the session ends with it. */
export const leaveOrganization = sessionProcedure
  .meta({ permission: 'signedIn' })
  .use(unbatched)
  .output(ZRemoved)
  .mutation(async ({ ctx }) => {
    const left = await ctx.services.members.remove(ctx.principal, ctx.principal.accountId);
    ctx.web.cookies.clear();
    return left;
  });
