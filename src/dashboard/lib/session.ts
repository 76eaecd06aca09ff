/** The signed-in account, asked once and shared: null means "show the sign-in page". */
import { useQuery } from '@tanstack/react-query';
import { trpc } from './trpc';

export const ME_KEY = ['account', 'me'] as const;

export function useMe() {
  return useQuery({ queryKey: ME_KEY, queryFn: () => trpc.account.me.query(), staleTime: 60_000 });
}
