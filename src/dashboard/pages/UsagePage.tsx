/** Usage: this month against the plan's cap (warning at 80%, refused at 100%) and events per day. */
import { useQuery } from '@tanstack/react-query';
import { DailyChart } from '../components/DailyChart';
import { ErrorState, LoadingRows } from '../components/States';
import { UsageMeter } from '../components/UsageMeter';
import { formatUtcDay, plural } from '../lib/format';
import { useMe } from '../lib/session';
import { trpc } from '../lib/trpc';

function monthEnd(month: string): string {
  const [y, m] = month.split('-').map(Number);
  return formatUtcDay(new Date(Date.UTC(y ?? 1970, m ?? 1, 1)).toISOString().slice(0, 10));
}

export function UsagePage() {
  const me = useMe();
  const usage = useQuery({ queryKey: ['usage'], queryFn: () => trpc.dashboard.usage.query() });
  const plan = me.data?.organization.plan ?? '';
  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>Usage</h1>
          <p className="muted">Events are counted by the UTC month in which they are received.</p>
        </div>
      </header>
      {usage.isPending ? (
        <LoadingRows rows={4} label="Loading usage…" />
      ) : usage.isError ? (
        <ErrorState error={usage.error} onRetry={() => void usage.refetch()} />
      ) : (
        <>
          <section className="card">
            <div className="card-title-row">
              <h2>This month</h2>
              <span className="badge plan">{plan} plan</span>
            </div>
            <UsageMeter used={usage.data.used} cap={usage.data.cap} state={usage.data.state} />
            {usage.data.state === 'warning' && (
              <div className="callout warning" role="status" data-testid="usage-warning">
                <strong>You have used {Math.floor((usage.data.used / usage.data.cap) * 100)}% of this month's events.</strong> When the cap is reached, new events
                are refused with <code>429 Monthly event limit reached</code> until the month ends ({monthEnd(usage.data.month)}, UTC).
              </div>
            )}
            {usage.data.state === 'exhausted' && (
              <div className="callout danger" role="alert" data-testid="usage-exhausted">
                <strong>Monthly limit reached.</strong> New events are being refused with <code>429 Monthly event limit reached</code> until{' '}
                {monthEnd(usage.data.month)} (UTC). Events already recorded stay readable and exportable.
              </div>
            )}
            {usage.data.state === 'ok' && (
              <p className="muted">
                {plural(Math.max(0, usage.data.cap - usage.data.used), 'event')} left until {monthEnd(usage.data.month)} (UTC).
              </p>
            )}
          </section>
          <section className="card">
            <h2>Events per day</h2>
            <DailyChart days={usage.data.daily} />
          </section>
        </>
      )}
    </div>
  );
}
