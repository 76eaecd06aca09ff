/**
 * Retention: the policy in force and any pending change, what was removed, legal holds, erasure (owners
 * change them), and the log's retention entries checked in this browser: each entry's inclusion proof,
 * and the entries against the log's own policy entries (`checkRetention`, as `cli verify` runs it).
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type SubmitEvent, useState } from 'react';
import type { TEvent } from '../../domain/event';
import { ERASURE_REASONS, RETENTION_ACTIONS, type TErasureReason, type THoldFilter } from '../../domain/retention';
import { checkRetention, type LogEntry, logEntryOf } from '../../client/retentionCheck';
import { importVerifier, verifyEventInclusion } from '../../client/webVerify';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { ErrorState, LoadingRows } from '../components/States';
import { formatDateTime, formatNumber, plural } from '../lib/format';
import { useLedgerSummary } from '../lib/ledgerCheck';
import { useCan } from '../lib/session';
import { errorMessage, trpc } from '../lib/trpc';

const RETENTION_KEY = ['retention'] as const;
const HOLD_FIELDS = ['actor_id', 'action', 'resource_type', 'resource_id'] as const;

/** Every retention entry of the log, each proven here; then the entries checked against each other. */
async function checkEntries(verifierKey: string): Promise<{ entries: number; problems: string[]; pruned: number; erased: number }> {
  const verifier = await importVerifier(verifierKey);
  const events: TEvent[] = [];
  for (const action of Object.values(RETENTION_ACTIONS)) {
    let cursor: string | undefined;
    do {
      const page = await trpc.dashboard.events.list.query({ action, limit: 1000, ...(cursor ? { cursor } : {}) });
      events.push(...page.data);
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }
  const entries: LogEntry[] = [];
  const problems: string[] = [];
  for (const event of events) {
    const proof = await trpc.dashboard.events.proof.query({ id: event.id });
    const { failures } = await verifyEventInclusion(event, proof, verifier);
    const entry = logEntryOf(proof.leaf_index + 1, event);
    if (failures.length) problems.push(`entry ${event.id}: ${failures.join('; ')}`);
    else if (entry) entries.push(entry);
  }
  const check = checkRetention(entries.sort((a, b) => a.seq - b.seq));
  return { entries: entries.length, problems: [...problems, ...check.problems], pruned: check.pruned, erased: check.erased };
}

export function RetentionPage() {
  const queryClient = useQueryClient();
  const manages = useCan('retention:manage');
  const verifies = useCan('ledger:verify');
  const view = useQuery({ queryKey: RETENTION_KEY, queryFn: () => trpc.dashboard.retention.view.query() });
  const ledger = useLedgerSummary();
  const refresh = () => void queryClient.invalidateQueries({ queryKey: RETENTION_KEY });
  const [days, setDays] = useState('');
  const [hold, setHold] = useState<Record<(typeof HOLD_FIELDS)[number], string> & { reason: string }>({ actor_id: '', action: '', resource_type: '', resource_id: '', reason: '' });
  const [erase, setErase] = useState({ actor_id: '', event_ids: '', reason: 'data_subject_request' as TErasureReason, confirmed: false });

  const setPolicy = useMutation({ mutationFn: (value: number | null) => trpc.dashboard.retention.setPolicy.mutate({ days: value }), onSuccess: () => { setDays(''); refresh(); } });
  const placeHold = useMutation({
    mutationFn: () => {
      const filter: THoldFilter = {};
      for (const field of HOLD_FIELDS) if (hold[field].trim()) filter[field] = hold[field].trim();
      return trpc.dashboard.retention.placeHold.mutate({ filter, reason: hold.reason });
    },
    onSuccess: () => { setHold({ actor_id: '', action: '', resource_type: '', resource_id: '', reason: '' }); refresh(); },
  });
  // The hold whose release awaits confirmation; its dialog releases it.
  const [releasing, setReleasing] = useState<{ id: string; reason: string } | null>(null);
  const runErase = useMutation({
    mutationFn: () => {
      const ids = erase.event_ids.split(/[\s,]+/).filter(Boolean);
      return trpc.dashboard.retention.erase.mutate({ ...(ids.length ? { event_ids: ids } : { actor_id: erase.actor_id.trim() }), reason: erase.reason });
    },
    onSuccess: () => { setErase({ ...erase, actor_id: '', event_ids: '', confirmed: false }); refresh(); },
  });
  const check = useMutation({ mutationFn: () => checkEntries(ledger.data?.verifier_key as string) });

  const submitPolicy = (e: SubmitEvent) => {
    e.preventDefault();
    setPolicy.mutate(days === 'forever' ? null : Number(days));
  };

  if (view.isPending) return <div className="page"><LoadingRows rows={4} label="Loading retention…" /></div>;
  if (view.isError) return <div className="page"><ErrorState error={view.error} onRetry={() => void view.refetch()} /></div>;
  const v = view.data;
  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>Retention</h1>
          <p className="muted">
            How long events are kept, what was removed and why. Every change, prune and erasure is an entry of your signed log, so an auditor can
            tell a removal the policy allowed from a deletion nobody allowed.
          </p>
        </div>
      </header>

      <section className="card" data-testid="retention-policy">
        <h2>Policy</h2>
        <dl className="details">
          <dt>In force</dt>
          <dd data-testid="retention-days">{v.days === null ? 'Events are kept for ever' : `${plural(v.days, 'day')} after they are received`}</dd>
          {v.pending && (
            <>
              <dt>Pending</dt>
              <dd data-testid="retention-pending">
                {v.pending.days === null ? 'Keep for ever' : plural(v.pending.days, 'day')}, in force from {formatDateTime(v.pending.effective_at)}
              </dd>
            </>
          )}
          <dt>Removed so far</dt>
          <dd data-testid="retention-removed">
            {formatNumber(v.pruned)} pruned{v.pruned_before ? ` (received before ${formatDateTime(v.pruned_before)})` : ''}, {formatNumber(v.erased)} erased on request
          </dd>
        </dl>
        {manages && (
          <form className="inline-form retention-form" onSubmit={submitPolicy} aria-label="Change the policy">
            <label className="field">
              <span>Keep events for (days)</span>
              <input name="days" value={days} onChange={(e) => setDays(e.target.value)} placeholder={`${v.min_days}–${v.max_days ?? '∞'}, or forever`} required />
            </label>
            <button type="submit" className="button primary" disabled={setPolicy.isPending}>Change policy</button>
            <p className="muted">A shorter policy takes effect {plural(v.notice_days, 'day')} after you set it; a longer one at once.</p>
            {setPolicy.isError && <p className="form-error" role="alert">{errorMessage(setPolicy.error)}</p>}
          </form>
        )}
      </section>

      <section className="card" data-testid="retention-holds">
        <h2>Legal holds</h2>
        {v.holds.length === 0 ? (
          <p className="muted">None: pruning and erasure apply to every event.</p>
        ) : (
          <table className="table" data-testid="holds-table">
            <thead><tr><th>Holds</th><th>Reason</th><th>Placed</th>{manages && <th />}</tr></thead>
            <tbody>
              {v.holds.map((h) => (
                <tr key={h.id}>
                  <td data-label="Holds">{Object.keys(h.filter).length === 0 ? 'every event' : Object.entries(h.filter).map(([k, value]) => `${k} = ${value}`).join(', ')}</td>
                  <td data-label="Reason">{h.reason}</td>
                  <td data-label="Placed" className="member-email">{formatDateTime(h.placed_at)} by {h.placed_by}</td>
                  {manages && <td className="actions"><button type="button" className="button secondary small" onClick={() => setReleasing({ id: h.id, reason: h.reason })}>Release</button></td>}
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {manages && (
          <form className="inline-form retention-form" onSubmit={(e) => { e.preventDefault(); placeHold.mutate(); }} aria-label="Place a hold">
            {HOLD_FIELDS.map((field) => (
              <label className="field" key={field}>
                <span>{field}</span>
                <input name={field} value={hold[field]} onChange={(e) => setHold({ ...hold, [field]: e.target.value })} placeholder="any" />
              </label>
            ))}
            <label className="field">
              <span>Reason</span>
              <input name="reason" value={hold.reason} onChange={(e) => setHold({ ...hold, reason: e.target.value })} required />
            </label>
            <button type="submit" className="button secondary" disabled={placeHold.isPending}>Place hold</button>
            {placeHold.isError && <p className="form-error" role="alert">{errorMessage(placeHold.error)}</p>}
          </form>
        )}
      </section>

      {manages && (
        <section className="card" data-testid="retention-erase">
          <h2>Erase on request</h2>
          <p className="muted">Deletes every event of one actor, or the events you list, for good (held events stay). The log records which sequence numbers, by you, and the reason code: never the data.</p>
          <form className="inline-form retention-form" onSubmit={(e) => { e.preventDefault(); runErase.mutate(); }} aria-label="Erase">
            <label className="field">
              <span>Actor ID</span>
              <input name="erase_actor_id" value={erase.actor_id} onChange={(e) => setErase({ ...erase, actor_id: e.target.value })} placeholder="user_123" />
            </label>
            <label className="field">
              <span>or event IDs</span>
              <input name="erase_event_ids" value={erase.event_ids} onChange={(e) => setErase({ ...erase, event_ids: e.target.value })} placeholder="id, id, …" />
            </label>
            <label className="field">
              <span>Reason</span>
              <select name="erase_reason" value={erase.reason} onChange={(e) => setErase({ ...erase, reason: e.target.value as TErasureReason })}>
                {ERASURE_REASONS.map((r) => <option key={r} value={r}>{r.replaceAll('_', ' ')}</option>)}
              </select>
            </label>
            <label className="checkbox">
              <input type="checkbox" name="erase_confirm" checked={erase.confirmed} onChange={(e) => setErase({ ...erase, confirmed: e.target.checked })} /> I understand this cannot be undone
            </label>
            <button type="submit" className="button danger" disabled={!erase.confirmed || runErase.isPending || (!erase.actor_id.trim() && !erase.event_ids.trim())}>Erase</button>
          </form>
          {runErase.data && <p data-testid="erase-result">Erased {plural(runErase.data.erased, 'event')}{runErase.data.held ? `; ${formatNumber(runErase.data.held)} kept by a legal hold` : ''}.</p>}
          {runErase.isError && <p className="form-error" role="alert">{errorMessage(runErase.error)}</p>}
        </section>
      )}

      {verifies && ledger.data && (
        <section className="card" data-testid="retention-check">
          <h2>Check the retention entries</h2>
          <p className="muted">
            Fetches every retention entry of the log, verifies each one&apos;s inclusion proof against the pinned key here, and checks each prune
            against the policy in force and its notice, as <code>audit-ledger verify</code> does. The complete check that every missing event is
            covered needs the whole log: <code>audit-ledger verify</code> on an unfiltered export, or the operator&apos;s <code>ledger audit</code>.
          </p>
          <button type="button" className="button secondary" onClick={() => check.mutate()} disabled={check.isPending}>Check in this browser</button>
          {check.data && (
            check.data.problems.length === 0 ? (
              <p data-testid="retention-verdict">
                {plural(check.data.entries, 'entry', 'entries')}, each proven in the signed log; they account for {formatNumber(check.data.pruned)} pruned and{' '}
                {plural(check.data.erased, 'erased event')}, each under the policy in force.
              </p>
            ) : (
              <div className="callout danger" role="alert" data-testid="retention-verdict">
                <strong>The retention entries do not check out.</strong>
                <ul>{check.data.problems.map((p) => <li key={p}>{p}</li>)}</ul>
              </div>
            )
          )}
          {check.isError && <p className="form-error" role="alert">{errorMessage(check.error)}</p>}
        </section>
      )}

      {releasing && (
        <ConfirmDialog
          title="Release this legal hold?"
          confirmLabel="Release hold"
          busyLabel="Releasing…"
          onConfirm={() => trpc.dashboard.retention.releaseHold.mutate({ id: releasing.id }).finally(refresh)}
          onClose={() => setReleasing(null)}
          testId="confirm-release"
        >
          <p>
            The hold for “{releasing.reason}” ends: the events it kept fall under the retention policy again, and are pruned at the next run if
            they are older than it, or can be erased on request. The release is an entry of your signed log.
          </p>
        </ConfirmDialog>
      )}
    </div>
  );
}
