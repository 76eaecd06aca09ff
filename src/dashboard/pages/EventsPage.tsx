/** The events explorer: filters kept in the URL, newest first, the list endpoint's cursor for "Load more". */
import { LoadMoreFooter } from '../components/LoadMoreFooter';
import { keepPreviousData, useInfiniteQuery } from '@tanstack/react-query';
import { type SubmitEvent, useEffect, useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { fieldChangeOf } from '../lib/fieldChange';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import {
  type ExplorerFilters,
  EMPTY_FILTERS,
  filtersFromSearch,
  filtersToSearch,
  hasAnyFilter,
  isoToLocalInput,
  localInputToIso,
  RANGE_PRESETS,
  type RangePreset,
  toApiFilters,
} from '../lib/filters';
import { formatDateTime, plural, utcOffsetLabel } from '../lib/format';
import { trpc } from '../lib/trpc';

const PAGE_SIZE = 50;

export function EventsPage() {
  const [search, setSearch] = useSearchParams();
  const applied = useMemo(() => filtersFromSearch(search), [search]);
  const [draft, setDraft] = useState<ExplorerFilters>(applied);
  useEffect(() => setDraft(applied), [applied]);

  // A preset is resolved once per applied filter, so "Load more" pages stay within one window.
  const apiFilters = useMemo(() => toApiFilters(applied), [applied]);
  const events = useInfiniteQuery({
    queryKey: ['events', 'list', apiFilters],
    queryFn: ({ pageParam }) => trpc.dashboard.events.list.query({ ...apiFilters, limit: PAGE_SIZE, ...(pageParam ? { cursor: pageParam } : {}) }),
    initialPageParam: '',
    getNextPageParam: (last) => last.next_cursor ?? undefined,
    placeholderData: keepPreviousData,
  });

  const apply = (e: SubmitEvent) => {
    e.preventDefault();
    setSearch(filtersToSearch(draft));
  };
  const clear = () => setSearch(filtersToSearch(EMPTY_FILTERS));
  const set = (key: keyof ExplorerFilters) => (e: { target: { value: string } }) => setDraft({ ...draft, [key]: e.target.value });
  const exportHref = (format: 'json' | 'csv') => `/session/events/export?${new URLSearchParams({ format, ...apiFilters }).toString()}`;
  const rows = events.data?.pages.flatMap((p) => p.data) ?? [];
  const removed = events.data?.pages[0]?.removed;
  const filtered = hasAnyFilter(applied);

  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>Events</h1>
          <p className="muted">Newest first. Times in your time zone ({utcOffsetLabel()}).</p>
        </div>
        <div className="header-actions" aria-label="Export">
          <a className="button secondary" href={exportHref('csv')} download data-testid="export-csv">
            Export CSV
          </a>
          <a className="button secondary" href={exportHref('json')} download data-testid="export-json">
            Export JSON
          </a>
        </div>
      </header>

      <form className="card filters" onSubmit={apply} aria-label="Filters">
        <label className="field">
          <span>Actor ID</span>
          <input name="actor_id" value={draft.actor_id} onChange={set('actor_id')} placeholder="user_123" />
        </label>
        <label className="field">
          <span>Action</span>
          <input name="action" value={draft.action} onChange={set('action')} placeholder="user.role_changed" />
        </label>
        <label className="field">
          <span>Resource type</span>
          <input name="resource_type" value={draft.resource_type} onChange={set('resource_type')} placeholder="user" />
        </label>
        <label className="field">
          <span>Resource ID</span>
          <input name="resource_id" value={draft.resource_id} onChange={set('resource_id')} placeholder="user_456" />
        </label>
        <label className="field">
          <span>Date range</span>
          <select name="range" value={draft.range} onChange={(e) => setDraft({ ...draft, range: e.target.value as RangePreset })}>
            {Object.entries(RANGE_PRESETS).map(([value, preset]) => (
              <option key={value} value={value}>
                {preset.label}
              </option>
            ))}
          </select>
        </label>
        {draft.range === 'custom' && (
          <>
            <label className="field">
              <span>From</span>
              <input
                type="datetime-local"
                name="from"
                value={isoToLocalInput(draft.from)}
                onChange={(e) => setDraft({ ...draft, from: localInputToIso(e.target.value, 'start') })}
              />
            </label>
            <label className="field">
              <span>To</span>
              <input
                type="datetime-local"
                name="to"
                value={isoToLocalInput(draft.to)}
                onChange={(e) => setDraft({ ...draft, to: localInputToIso(e.target.value, 'end') })}
              />
            </label>
          </>
        )}
        <div className="filter-actions">
          <button type="submit" className="button primary">
            Apply filters
          </button>
          {filtered && (
            <button type="button" className="button ghost" onClick={clear}>
              Clear
            </button>
          )}
        </div>
      </form>

      {removed && (
        <p className="callout" data-testid="events-removed">
          {removed.pruned > 0 && (
            <>
              {plural(removed.pruned, 'event')} received before {removed.pruned_before ? formatDateTime(removed.pruned_before) : 'the cutoff'} {removed.pruned === 1 ? 'was' : 'were'} pruned under the{' '}
              {removed.policy_days}-day retention policy.{' '}
            </>
          )}
          {removed.erased > 0 && <>{plural(removed.erased, 'event')} {removed.erased === 1 ? 'was' : 'were'} erased on request. </>}
          They are not listed; each removal is an entry of the signed log (<Link to="/retention">Retention</Link>).
        </p>
      )}

      <section className="card flush" aria-busy={events.isFetching}>
        {events.isPending ? (
          <LoadingRows rows={8} label="Loading events…" />
        ) : events.isError ? (
          <ErrorState error={events.error} onRetry={() => void events.refetch()} />
        ) : rows.length === 0 ? (
          filtered ? (
            <EmptyState title="No events match these filters" action={<button type="button" className="button secondary" onClick={clear}>Clear filters</button>}>
              Try a wider date range, or check the spelling: filters match exactly.
            </EmptyState>
          ) : (
            <EmptyState title="No events yet" action={<Link className="button primary" to="/start">See how to send one</Link>}>
              Send your first event with an API key and it will show up here.
            </EmptyState>
          )
        ) : (
          <>
            <div className="table-wrap">
              <table className="table events-table">
                <thead>
                  <tr>
                    <th>Time</th>
                    <th>Actor</th>
                    <th>Action</th>
                    <th>Resource</th>
                  </tr>
                </thead>
                <tbody className={events.isPlaceholderData ? 'stale' : undefined}>
                  {rows.map((event) => {
                    const change = fieldChangeOf(event.metadata);
                    return (
                      <tr key={event.id} data-testid="event-row">
                        <td className="nowrap" data-label="Time">
                          <Link className="row-link" to={{ pathname: `/events/${event.id}`, search: search.toString() }}>
                            {formatDateTime(event.timestamp)}
                          </Link>
                        </td>
                        <td data-label="Actor">
                          <div>{event.actor_name ?? event.actor_id}</div>
                          {event.actor_name && <div className="muted small">{event.actor_id}</div>}
                        </td>
                        <td data-label="Action">
                          <code className="action">{event.action}</code>
                          {change && <span className="badge change">{change.field} changed</span>}
                        </td>
                        <td data-label="Resource">
                          <div>{event.resource_name ?? event.resource_id}</div>
                          <div className="muted small">
                            {event.resource_type}
                            {event.resource_name ? ` · ${event.resource_id}` : ''}
                          </div>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
            <LoadMoreFooter shown={rows.length} hasMore={events.hasNextPage} loading={events.isFetchingNextPage} onMore={() => void events.fetchNextPage()} />
          </>
        )}
      </section>
    </div>
  );
}
