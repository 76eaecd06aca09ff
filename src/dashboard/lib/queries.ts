/**
 * Queries more than one page reads. A cache key and its fetcher are defined together here, so two
 * pages can never store different shapes under one key.
 */
import { useQuery } from '@tanstack/react-query';
import { trpc } from './trpc';

export const KEYS_QUERY_KEY = ['keys'] as const;

/** The organization's API keys, newest first. */
export function useApiKeys() {
  return useQuery({ queryKey: KEYS_QUERY_KEY, queryFn: () => trpc.dashboard.keys.list.query() });
}

/** The newest event, if any: whether the organization has sent anything yet. */
export function useLatestEvent() {
  return useQuery({ queryKey: ['events', 'latest'], queryFn: () => trpc.dashboard.events.list.query({ limit: 1 }) });
}
