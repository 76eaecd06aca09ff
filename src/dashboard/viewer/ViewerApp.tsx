/**
 * The viewer's one page: filters, the events (newest first, paged), an event's detail with its diff and
 * its proof checked here. Each row is a button (Tab, then Enter or Space); the opened event takes the
 * focus and scrolls into view, and Escape or "Back to the list" hands the focus back to its row.
 */
import { LoadMoreFooter } from '../components/LoadMoreFooter';
import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { createTRPCClient, httpLink } from '@trpc/client';
import { type KeyboardEvent, type SubmitEvent, useEffect, useMemo, useRef, useState } from 'react';
import type { TEvent } from '../../domain/event';
import { importVerifier, verifyEventInclusion } from '../../client/webVerify';
import type { AppRouter } from '../../trpc/router';
import { FieldDiff } from '../components/FieldDiff';
import { fieldChangeOf } from '../lib/fieldChange';
import { formatDateTime, formatNumber, plural } from '../lib/format';
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
  const rowButtons = useRef(new Map<string, HTMLButtonElement>());
  const close = () => {
    if (!open) return;
    setOpen(null);
    rowButtons.current.get(open.id)?.focus();
  };
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
        <div className="header-actions">
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
      <section className="card flush">
        <table className="table events-table" data-testid="viewer-events">
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
              <tr key={e.id} data-organization-id={e.organization_id} className={open?.id === e.id ? 'selected' : undefined}>
                <td className="nowrap" data-label="Time">
                  <button
                    type="button"
                    className="row-button"
                    aria-expanded={open?.id === e.id}
                    aria-controls={open?.id === e.id ? 'viewer-event' : undefined}
                    onClick={() => setOpen(e)}
                    ref={(button) => {
                      if (button) rowButtons.current.set(e.id, button);
                      else rowButtons.current.delete(e.id);
                    }}
                  >
                    {formatDateTime(e.timestamp)}
                  </button>
                </td>
                <td data-label="Actor">{e.actor_name ?? e.actor_id}</td>
                <td data-label="Action">
                  <code className="action">{e.action}</code>
                </td>
                <td data-label="Resource">
                  {e.resource_type}/{e.resource_id}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {events.isSuccess && rows.length === 0 && <p className="muted viewer-empty">No events match.</p>}
        {rows.length > 0 && (
          <LoadMoreFooter shown={rows.length} hasMore={events.hasNextPage} loading={events.isFetchingNextPage} onMore={() => void events.fetchNextPage()} />
        )}
      </section>

      {open && <EventDetail key={open.id} client={client} event={open} onClose={close} />}
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
  const section = useRef<HTMLElement>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  // Opened from a row, the event is where the reader (and a screen reader) goes next.
  useEffect(() => {
    section.current?.scrollIntoView({ block: 'start' });
    heading.current?.focus({ preventScroll: true });
  }, []);
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      onClose();
    }
  };
  return (
    <section ref={section} id="viewer-event" className="card viewer-event" aria-labelledby="viewer-event-title" data-testid="viewer-event" onKeyDown={onKeyDown}>
      <header className="page-header">
        <h2 id="viewer-event-title" ref={heading} tabIndex={-1}>
          <code>{event.action}</code> on {event.resource_type}/{event.resource_id}
        </h2>
        <button type="button" className="button secondary" onClick={onClose}>
          Back to the list
        </button>
      </header>
      <dl className="details">
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
      <pre className="json">{JSON.stringify(event.metadata, null, 2)}</pre>
      <h3>Proof</h3>
      {check.isPending ? (
        <p className="muted">Checking the event against the signed ledger…</p>
      ) : check.isError ? (
        <p className="form-error" role="alert">
          {errorMessage(check.error)}
        </p>
      ) : check.data.failures.length === 0 ? (
        <p className="callout ok" data-testid="viewer-proof-verified">
          Verified in this browser: the event is sequence number {formatNumber(check.data.proof.leaf_index + 1)} of the ledger&apos;s signed checkpoint of {plural(check.data.proof.tree_size, 'event')}.
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
