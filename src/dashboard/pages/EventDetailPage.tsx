/** One event: every field, metadata as formatted JSON, the before/after diff of a field change, and its proof in the ledger. */
import { useQuery } from '@tanstack/react-query';
import { Link, useLocation, useParams } from 'react-router';
import { CopyButton } from '../components/CopyButton';
import { EventLedgerCard } from '../components/EventLedgerCard';
import { FieldDiff } from '../components/FieldDiff';
import { fieldChangeOf } from '../lib/fieldChange';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { formatDateTime } from '../lib/format';
import { useCan } from '../lib/session';
import { errorStatus, trpc } from '../lib/trpc';

export function EventDetailPage() {
  const { id = '' } = useParams();
  const location = useLocation();
  const event = useQuery({ queryKey: ['events', 'get', id], queryFn: () => trpc.dashboard.events.get.query({ id }), retry: false });
  // Proofs are verification data: auditors, admins and owners (domain/roles.ts).
  const verifies = useCan('ledger:verify');
  const back = (
    <Link className="back-link" to={{ pathname: '/events', search: location.search }}>
      ← Back to events
    </Link>
  );

  if (event.isPending) {
    return (
      <div className="page">
        {back}
        <LoadingRows rows={6} label="Loading event…" />
      </div>
    );
  }
  if (event.isError) {
    return (
      <div className="page">
        {back}
        {errorStatus(event.error) === 404 ? (
          <EmptyState title="Event not found">It does not exist, or it belongs to another organization.</EmptyState>
        ) : (
          <ErrorState error={event.error} onRetry={() => void event.refetch()} />
        )}
      </div>
    );
  }

  const e = event.data;
  const change = fieldChangeOf(e.metadata);
  const metadataJson = JSON.stringify(e.metadata, null, 2);
  const fields: [string, string | null][] = [
    ['id', e.id],
    ['timestamp', e.timestamp],
    ['actor_id', e.actor_id],
    ['actor_name', e.actor_name],
    ['actor_email', e.actor_email],
    ['action', e.action],
    ['resource_type', e.resource_type],
    ['resource_id', e.resource_id],
    ['resource_name', e.resource_name],
    ['organization_id', e.organization_id],
    ['api_key_id', e.api_key_id],
    // Only on a signed event (a key bound to a producer key): the Ledger card checks it.
    ...(e.producer_signature === undefined ? [] : [['producer_signature', e.producer_signature] as [string, string]]),
  ];
  return (
    <div className="page">
      {back}
      <header className="page-header">
        <div>
          <h1>
            <code className="action">{e.action}</code>
          </h1>
          <p className="muted">
            {e.actor_name ?? e.actor_id} on {e.resource_type} {e.resource_name ?? e.resource_id} · {formatDateTime(e.timestamp)}
          </p>
        </div>
      </header>
      {change && (
        <section className="card">
          <h2>Change</h2>
          <FieldDiff change={change} />
        </section>
      )}
      <div className="detail-grid">
        <section className="card">
          <h2>Fields</h2>
          <dl className="fields">
            {fields.map(([name, value]) => (
              <div key={name} className="field-row">
                <dt>{name}</dt>
                <dd>{value === null ? <span className="muted">null</span> : name === 'timestamp' ? <>{value} <span className="muted">({formatDateTime(value)})</span></> : <code className={name === 'producer_signature' ? 'wrap' : undefined}>{value}</code>}</dd>
              </div>
            ))}
          </dl>
        </section>
        <section className="card">
          <div className="card-title-row">
            <h2>Metadata</h2>
            <CopyButton text={metadataJson} label="Copy JSON" />
          </div>
          <pre className="json" data-testid="metadata-json" tabIndex={0}>
            {metadataJson}
          </pre>
        </section>
      </div>
      {verifies && <EventLedgerCard event={e} />}
    </div>
  );
}
