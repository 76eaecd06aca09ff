/** The signed-in account, asked once and shared: null means "show the sign-in page". */
import { useQuery } from '@tanstack/react-query';
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
