/** "/": a new organization starts at getting started; one that has events goes to the explorer. */
import { useQuery } from '@tanstack/react-query';
import { Navigate } from 'react-router';
import { ErrorState, LoadingRows } from '../components/States';
import { trpc } from '../lib/trpc';

export function HomePage() {
  const latest = useQuery({ queryKey: ['events', 'latest'], queryFn: () => trpc.dashboard.events.list.query({ limit: 1 }) });
  if (latest.isPending) return <LoadingRows rows={4} />;
  if (latest.isError) return <ErrorState error={latest.error} onRetry={() => void latest.refetch()} />;
  return <Navigate to={latest.data.data.length > 0 ? '/events' : '/start'} replace />;
}
