/** "/": a new organization starts at getting started; one that has events goes to the explorer. */
import { Navigate } from 'react-router';
import { ErrorState, LoadingRows } from '../components/States';
import { useLatestEvent } from '../lib/queries';
import { useCan } from '../lib/session';

export function HomePage() {
  const latest = useLatestEvent();
  // Getting started is about keys: members who cannot make one go to the events.
  const setsUp = useCan('keys:manage');
  if (latest.isPending) return <LoadingRows rows={4} />;
  if (latest.isError) return <ErrorState error={latest.error} onRetry={() => void latest.refetch()} />;
  return <Navigate to={latest.data.data.length > 0 || !setsUp ? '/events' : '/start'} replace />;
}
