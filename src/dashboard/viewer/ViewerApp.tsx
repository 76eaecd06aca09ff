/** The viewer's one page: filters, the events (newest first, paged), an event's detail with its diff and its proof checked here. */
import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { createTRPCClient, httpLink } from '@trpc/client';
import { type SubmitEvent, useMemo, useState } from 'react';
import type { TEvent } from '../../domain/event';
import { importVerifier, verifyEventInclusion } from '../../domain/ledger/webVerify';
import type { AppRouter } from '../../trpc/router';
import { FieldDiff } from '../components/FieldDiff';
import { fieldChangeOf } from '../lib/fieldChange';
import { formatDateTime } from '../lib/format';
import { errorMessage } from '../lib/trpc';

const PAGE_SIZE = 50;
const FILTERS = ['actor_id', 'action', 'resource_type', 'resource_id', 'start_date', 'end_date'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

function clientFor(token: string) {
  return createTRPCClient<AppRouter>({ links: [httpLink({ url: '/trpc', headers: { authorization: `Bearer ${token}` } })] });
}

export function ViewerApp({ token }: { token: string | null }) {
  const client = useMemo(() => (token ? clientFor(token) : null), [token]);
  const scope = useQuery({ queryKey: ['scope'], queryFn: () => (client as NonNullable<typeof client>).viewer.scope.query(), enabled: client !== null });
  const [draft, setDraft] = useState<Filters>({});
  const [filters, setFilters] = useState<Filters>({});
  const [open, setOpen] = useState<TEvent | null>(null);
  const events = useInfiniteQuery({
    queryKey: ['events', filters],
    enabled: client !== null && scope.isSuccess,
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) => (client as NonNullable<typeof client>).viewer.events.list.query({ ...filters, limit: PAGE_SIZE, ...(pageParam ? { cursor: pageParam } : {}) }),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });

  if (!client) return <Message text="This page needs a viewer token: open it from the link your provider gave you." />;
  if (scope.isPending) return <Message text="Loading…" />;
  if (scope.isError) return <Message text={errorMessage(scope.error)} />;

  const submit = (e: SubmitEvent) => {
    e.preventDefault();
    setFilters(Object.fromEntries(Object.entries(draft).filter(([, v]) => v)));
  };
  const exportHref = (format: 'csv' | 'json') => `/viewer/export?${new URLSearchParams({ ...filters, format, token: token as string }).toString()}`;
  const rows = events.data?.pages.flatMap((p) => p.data) ?? [];

  return (
    <div className="page viewer">
      <header className="page-header">
        <div>
          <h1>Audit trail</h1>
          <p className="muted" data-testid="viewer-scope">
            Events of <code>{scope.data.organization_id}</code>
            {scope.data.actions && <> (actions: {scope.data.actions.join(', ')})</>}. This link works until {formatDateTime(scope.data.expires_at)}.
          </p>
        </div>
        <div className="actions">
          <a className="button ghost" href={exportHref('csv')} download>
            Export CSV
          </a>
          <a className="button ghost" href={exportHref('json')} download>
            Export JSON
          </a>
        </div>
      </header>

      <form className="card inline-form filters" onSubmit={submit}>
        {FILTERS.map((name) => (
          <label key={name} className="field">
            <span>{name.replace('_', ' ')}</span>
            <input name={name} value={draft[name] ?? ''} onChange={(e) => setDraft({ ...draft, [name]: e.target.value })} placeholder={name.endsWith('date') ? 'YYYY-MM-DD' : ''} />
          </label>
        ))}
        <button type="submit" className="button primary">
          Apply
        </button>
      </form>

      {events.isError && (
        <p className="form-error" role="alert">
          {errorMessage(events.error)}
        </p>
      )}
      <section className="card">
        <table className="table" data-testid="viewer-events">
          <thead>
            <tr>
              <th>Time</th>
              <th>Actor</th>
              <th>Action</th>
              <th>Resource</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((e) => (
              <tr key={e.id} className="clickable" onClick={() => setOpen(e)} data-organization-id={e.organization_id}>
                <td>{formatDateTime(e.timestamp)}</td>
                <td>{e.actor_name ?? e.actor_id}</td>
                <td>
                  <code>{e.action}</code>
                </td>
                <td>
                  {e.resource_type}/{e.resource_id}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {events.isSuccess && rows.length === 0 && <p className="muted">No events.</p>}
        {events.hasNextPage && (
          <button type="button" className="button ghost" onClick={() => void events.fetchNextPage()} disabled={events.isFetchingNextPage}>
            Load more
          </button>
        )}
      </section>

      {open && <EventDetail client={client} event={open} onClose={() => setOpen(null)} />}
    </div>
  );
}

function EventDetail({ client, event, onClose }: { client: ReturnType<typeof clientFor>; event: TEvent; onClose: () => void }) {
  const change = fieldChangeOf(event.metadata);
  const check = useQuery({
    queryKey: ['proof', event.id],
    queryFn: async () => {
      const [proof, key] = await Promise.all([client.viewer.events.proof.query({ id: event.id }), client.viewer.key.query()]);
      return { proof, ...(await verifyEventInclusion(event, proof, await importVerifier(key.verifier_key))) };
    },
  });
  return (
    <section className="card" aria-label="Event" data-testid="viewer-event">
      <header className="page-header">
        <h2>
          <code>{event.action}</code> on {event.resource_type}/{event.resource_id}
        </h2>
        <button type="button" className="button ghost" onClick={onClose}>
          Close
        </button>
      </header>
      <dl className="fields">
        <dt>When</dt>
        <dd>{formatDateTime(event.timestamp)}</dd>
        <dt>Actor</dt>
        <dd>
          {event.actor_name ?? event.actor_id} {event.actor_email && <span className="muted">({event.actor_email})</span>}
        </dd>
        <dt>Event id</dt>
        <dd>
          <code>{event.id}</code>
        </dd>
      </dl>
      {change && <FieldDiff change={change} />}
      <pre className="code-block">{JSON.stringify(event.metadata, null, 2)}</pre>
      <h3>Proof</h3>
      {check.isPending ? (
        <p className="muted">Checking the event against the signed ledger…</p>
      ) : check.isError ? (
        <p className="form-error" role="alert">
          {errorMessage(check.error)}
        </p>
      ) : check.data.failures.length === 0 ? (
        <p className="callout success" data-testid="viewer-proof-verified">
          Verified in this browser: the event is leaf {check.data.proof.leaf_index} of the ledger&apos;s signed checkpoint of {check.data.proof.tree_size} events.
        </p>
      ) : (
        <p className="callout danger" role="alert" data-testid="viewer-proof-failed">
          Not verified: {check.data.failures.join('; ')}
        </p>
      )}
    </section>
  );
}

function Message({ text }: { text: string }) {
  return (
    <div className="page viewer">
      <p className="callout" role="status">
        {text}
      </p>
    </div>
  );
}
