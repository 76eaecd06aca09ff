/** The signed-in account, asked once and shared: null means "show the sign-in page". */
import { useQuery } from '@tanstack/react-query';
import type { TSessionEnded } from '../../domain/errors';
import { can, type Permission } from '../../domain/roles';
import { trpc } from './trpc';

export const ME_KEY = ['account', 'me'] as const;

export function useMe() {
  return useQuery({ queryKey: ME_KEY, queryFn: () => trpc.account.me.query(), staleTime: 60_000 });
}

/**
 * Whether the signed-in member's role allows `permission` (the server's own table): pages hide what the
 * server would refuse. The server checks every call all the same.
 */
export function useCan(permission: Permission): boolean {
  const role = useMe().data?.role;
  return role !== undefined && can(role, permission);
}

/**
 * Why the session in use ended, for the sign-in page to say: the server's reason when a membership change
 * ended it, `ended` when it only says "Not signed in" (expired, logged out elsewhere). Set by the query
 * cache's error handler (main.tsx), cleared by the next sign-in; kept in memory only, so a reload forgets it.
 */
export type SessionEnd = TSessionEnded | 'ended';
export const SESSION_END_KEY = ['account', 'session-end'] as const;

export function useSessionEnd(): SessionEnd | null {
  return useQuery({ queryKey: SESSION_END_KEY, queryFn: (): SessionEnd | null => null, staleTime: Infinity }).data ?? null;
}

const ARTICLE: Record<TSessionEnded['by_role'], string> = { owner: 'an owner', admin: 'an admin', auditor: 'an auditor', viewer: 'a viewer' };

/** The sentence the sign-in page shows for it. */
export function sessionEndText(end: SessionEnd): string {
  if (end === 'ended') return 'Your session ended (it expired, or it was logged out elsewhere). Log in again to continue.';
  if (end.reason === 'left') {
    return `You left ${end.organization}, so this session ended. Log in to another of your organizations, or ask an owner or admin to invite you again.`;
  }
  return `You no longer have access to ${end.organization}: ${ARTICLE[end.by_role]} removed you. Log in to another of your organizations, or ask an owner or admin to invite you again.`;
}
