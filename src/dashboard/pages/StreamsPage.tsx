/** Log streams: create (a webhook's signing secret shown once), test, retry now, pause, resume, delete; each stream's state, lag, last delivery and error, and its deliveries per minute. */
import { FormHint } from '../components/FormHint';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type SubmitEvent, useState } from 'react';
import { ShownOnce } from '../components/ShownOnce';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { formatDateTime, formatNumber, formatRelative, plural } from '../lib/format';
import { errorMessage, trpc } from '../lib/trpc';

type StreamView = Awaited<ReturnType<typeof trpc.dashboard.streams.list.query>>['data'][number];
type CreateInput = Parameters<typeof trpc.dashboard.streams.create.mutate>[0];
type DestinationType = CreateInput['destination']['type'];

const STREAMS_KEY = ['streams'] as const;

const TYPES: { value: DestinationType; label: string }[] = [
  { value: 'webhook', label: 'HTTPS webhook (Standard Webhooks)' },
  { value: 's3', label: 'S3-compatible storage' },
  { value: 'splunk', label: 'Splunk HTTP Event Collector' },
  { value: 'datadog', label: 'Datadog Logs' },
];

/** The fields each destination asks for; `secret` ones are write-only. */
const FIELDS: Record<DestinationType, { name: string; label: string; secret?: boolean; optional?: boolean; placeholder?: string }[]> = {
  webhook: [{ name: 'url', label: 'URL', placeholder: 'https://siem.example.com/audit-hook' }],
  splunk: [
    { name: 'url', label: 'HEC URL', placeholder: 'https://splunk.example.com:8088' },
    { name: 'token', label: 'HEC token', secret: true },
    { name: 'index', label: 'Index', optional: true },
    { name: 'sourcetype', label: 'Sourcetype', optional: true },
  ],
  datadog: [
    { name: 'url', label: 'Intake URL', placeholder: 'https://http-intake.logs.datadoghq.com' },
    { name: 'api_key', label: 'API key', secret: true },
    { name: 'service', label: 'Service', optional: true },
    { name: 'tags', label: 'Tags', optional: true, placeholder: 'env:prod,team:security' },
  ],
  s3: [
    { name: 'endpoint', label: 'Endpoint', optional: true, placeholder: 'empty for AWS S3' },
    { name: 'region', label: 'Region', placeholder: 'us-east-1' },
    { name: 'bucket', label: 'Bucket' },
    { name: 'prefix', label: 'Key prefix', optional: true },
    { name: 'access_key_id', label: 'Access key id' },
    { name: 'secret_access_key', label: 'Secret access key', secret: true },
  ],
};

function destinationText(d: StreamView['destination']): string {
  if (d.type === 's3') return `s3://${d.bucket}/${d.prefix ?? ''}`;
  return d.url;
}

export function StreamsPage() {
  const queryClient = useQueryClient();
  const streams = useQuery({ queryKey: STREAMS_KEY, queryFn: () => trpc.dashboard.streams.list.query(), refetchInterval: 3000 });
  const [created, setCreated] = useState<{ name: string; secret: string } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: STREAMS_KEY });

  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>Streams</h1>
          <p className="muted">
            Deliver every event, in order and with its ledger receipt, to your SIEM, object storage or endpoint. A stream keeps its place while paused or failing, and catches up.
          </p>
        </div>
      </header>
      <CreateStream onCreated={(name, secret) => { if (secret) setCreated({ name, secret }); void refresh(); }} />
      {created && (
        <ShownOnce title={`Copy the signing secret of “${created.name}” now`} value={created.secret} id="stream-secret" label="Signing secret" onDone={() => setCreated(null)}>
          Your receiver verifies each request&apos;s <code>webhook-signature</code> with it (Standard Webhooks). It is not shown again.
        </ShownOnce>
      )}
      <section className="card flush">
        <h2 className="card-title">Streams</h2>
        {streams.isPending ? (
          <LoadingRows rows={2} />
        ) : streams.isError ? (
          <ErrorState error={streams.error} onRetry={() => void streams.refetch()} />
        ) : streams.data.data.length === 0 ? (
          <EmptyState title="No streams yet">Create one above to send your events where your security team looks.</EmptyState>
        ) : (
          <div className="table-wrap">
            <table className="table streams-table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Destination</th>
                  <th>State</th>
                  <th>Lag</th>
                  <th>Last delivery</th>
                  <th>Deliveries, last hour</th>
                  <th>
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {streams.data.data.map((s) => (
                  <StreamRow key={s.id} stream={s} onChanged={() => void refresh()} />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </div>
  );
}

function CreateStream({ onCreated }: { onCreated: (name: string, secret: string | null) => void }) {
  const [name, setName] = useState('');
  const [type, setType] = useState<DestinationType>('webhook');
  const [format, setFormat] = useState<'json' | 'ocsf'>('json');
  const [start, setStart] = useState('');
  const [values, setValues] = useState<Record<string, string>>({});
  // Checked on submit and said beside the button, rather than a greyed-out button that does not say why.
  const [invalid, setInvalid] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: () => {
      const destination: Record<string, unknown> = { type };
      for (const field of FIELDS[type]) if (values[field.name]) destination[field.name] = values[field.name];
      if (type === 's3' && values.endpoint) destination.path_style = true;
      const input = { name, destination, format, ...(start && { start_seq: Number(start) }) } as CreateInput;
      return trpc.dashboard.streams.create.mutate(input);
    },
    onSuccess: (result) => {
      onCreated(result.name, result.signing_secret);
      setName('');
      setValues({});
      setStart('');
    },
  });
  const submit = (e: SubmitEvent) => {
    e.preventDefault();
    const missing = [name.trim() === '' ? 'Name' : null, ...FIELDS[type].filter((f) => !f.optional && !values[f.name]?.trim()).map((f) => f.label)].filter((f): f is string => f !== null);
    const problem = missing.length > 0 ? `Fill in ${missing.join(', ')} first.` : start !== '' && !/^[1-9][0-9]*$/.test(start) ? 'The start is a sequence number: 1 for the whole log, or empty for the next event.' : null;
    setInvalid(problem);
    if (!problem) create.mutate();
  };
  return (
    <section className="card">
      <h2>Create a stream</h2>
      <form className="stack-form stream-form" onSubmit={submit} noValidate>
        <div className="inline-form">
          <label className="field grow">
            <span>Name</span>
            <input name="stream-name" value={name} onChange={(e) => { setName(e.target.value); setInvalid(null); }} maxLength={100} placeholder="e.g. SIEM" aria-describedby="stream-form-hint" />
          </label>
          <label className="field">
            <span>Destination</span>
            <select name="stream-type" value={type} onChange={(e) => { setType(e.target.value as DestinationType); setValues({}); }}>
              {TYPES.map((t) => (
                <option key={t.value} value={t.value}>{t.label}</option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>Format</span>
            <select name="stream-format" value={format} onChange={(e) => setFormat(e.target.value as 'json' | 'ocsf')}>
              <option value="json">Event JSON with receipt</option>
              <option value="ocsf">OCSF 1.3.0 API Activity</option>
            </select>
          </label>
        </div>
        <div className="inline-form">
          {FIELDS[type].map((field) => (
            <label key={field.name} className="field grow">
              <span>{field.label}{field.optional ? ' (optional)' : ''}</span>
              <input
                name={`stream-${field.name}`}
                type={field.secret ? 'password' : 'text'}
                autoComplete="off"
                value={values[field.name] ?? ''}
                placeholder={field.placeholder}
                onChange={(e) => { setValues({ ...values, [field.name]: e.target.value }); setInvalid(null); }}
              />
            </label>
          ))}
          <label className="field">
            <span>Start at sequence number</span>
            <input name="stream-start" inputMode="numeric" value={start} onChange={(e) => { setStart(e.target.value); setInvalid(null); }} placeholder="next event" />
          </label>
        </div>
        <div className="form-actions">
          <button type="submit" className="button primary" disabled={create.isPending}>
            {create.isPending ? 'Creating…' : 'Create stream'}
          </button>
          <FormHint id="stream-form-hint" problem={invalid}>Deliveries start within seconds; a webhook&apos;s signing secret is shown once.</FormHint>
        </div>
        {create.isError && (
          <p className="form-error" role="alert">
            {errorMessage(create.error)}
          </p>
        )}
      </form>
    </section>
  );
}

/** What a test's answer means for the stream: a test is not a delivery, so it never changes the state by itself. */
function testMessage(result: { ok: boolean; status: number | null; error: string | null; retrying: boolean }): string {
  if (!result.ok) return `Test delivery failed: ${result.error ?? 'no answer'}`;
  const acknowledged = `Test delivery acknowledged${result.status !== null ? ` (HTTP ${result.status})` : ''}.`;
  return result.retrying ? `${acknowledged} Retrying the stream now: its next delivery decides whether it is active again.` : acknowledged;
}

function StreamRow({ stream, onChanged }: { stream: StreamView; onChanged: () => void }) {
  const [confirming, setConfirming] = useState(false);
  // A retry's note is about the failure: it goes once the stream is no longer failing.
  const [note, setNote] = useState<{ text: string; whileFailing: boolean } | null>(null);
  const act = useMutation({
    mutationFn: async (what: 'pause' | 'resume' | 'remove' | 'test' | 'retry') => {
      setNote(null);
      if (what === 'test') {
        setNote({ text: testMessage(await trpc.dashboard.streams.test.mutate({ id: stream.id })), whileFailing: false });
        return;
      }
      await trpc.dashboard.streams[what].mutate({ id: stream.id });
      if (what === 'retry') setNote({ text: 'Retrying now: the state follows this attempt.', whileFailing: true });
    },
    onSuccess: onChanged,
  });
  const failing = stream.state === 'failing';
  return (
    <tr data-testid={`stream-row-${stream.name}`}>
      <td data-label="Name">
        <div>
          {stream.name}
          <div className="muted small">{stream.format === 'ocsf' ? 'OCSF' : 'JSON'}, from #{formatNumber(stream.start_seq)}</div>
        </div>
      </td>
      <td data-label="Destination">
        <div className="stream-destination">
          <span className="badge">{stream.destination.type}</span>
          <code className="small">{destinationText(stream.destination)}</code>
        </div>
      </td>
      <td data-label="State">
        <div>
          <span className={`badge stream-${stream.state}`} data-testid="stream-state">{stream.state}</span>
          {failing && <StreamFailure stream={stream} />}
          {stream.state === 'paused' && stream.last_error && (
            <div className="muted small stream-error" title={stream.last_error}>
              Paused while failing{stream.last_error_at ? `, last error at ${formatDateTime(stream.last_error_at)}` : ''}: {stream.last_error.slice(0, 120)}
            </div>
          )}
        </div>
      </td>
      <td data-label="Lag" data-testid="stream-lag">
        <div>
          <span className="lag-count">{plural(stream.lag_events, 'event')}</span>
          {stream.lag_seconds !== null && <div className="muted small">{plural(Math.round(stream.lag_seconds), 'second')} behind</div>}
        </div>
      </td>
      <td data-label="Last delivery" title={stream.last_delivery_at ? formatDateTime(stream.last_delivery_at) : undefined}>
        <div>
          {stream.last_delivery_at ? formatRelative(stream.last_delivery_at) : 'Never'}
          <div className="muted small">through #{formatNumber(stream.delivered_seq)}</div>
        </div>
      </td>
      <td data-label="Deliveries">
        <History history={stream.history} />
      </td>
      <td className="actions">
        <div className="stream-actions">
          {failing && (
            <button type="button" className="button primary small" onClick={() => act.mutate('retry')} disabled={act.isPending}>Retry now</button>
          )}
          <button type="button" className="button secondary small" onClick={() => act.mutate('test')} disabled={act.isPending}>Test</button>
          {stream.state === 'paused' ? (
            <button type="button" className="button secondary small" onClick={() => act.mutate('resume')} disabled={act.isPending}>Resume</button>
          ) : (
            <button type="button" className="button secondary small" onClick={() => act.mutate('pause')} disabled={act.isPending}>Pause</button>
          )}
          {confirming ? (
            <>
              <button type="button" className="button danger small" onClick={() => act.mutate('remove')} disabled={act.isPending}>Delete for good</button>
              <button type="button" className="button ghost small" onClick={() => setConfirming(false)}>Keep</button>
            </>
          ) : (
            <button type="button" className="button danger-outline small" onClick={() => setConfirming(true)}>Delete</button>
          )}
        </div>
        {confirming && <div className="small stream-note">Deleting stops deliveries and forgets its place; the events stay in the log.</div>}
        {note && (!note.whileFailing || failing) && <div className="small stream-note" role="status" data-testid="stream-test-result">{note.text}</div>}
        {act.isError && <div className="form-error small" role="alert">{errorMessage(act.error)}</div>}
      </td>
    </tr>
  );
}

/** Why a failing stream fails, since when, and when it tries again. */
function StreamFailure({ stream }: { stream: StreamView }) {
  return (
    <div className="small stream-failure" data-testid="stream-failure">
      <div className="stream-retrying">
        Retrying{stream.next_attempt_at ? `: next attempt ${formatRelative(stream.next_attempt_at)}` : ''}
      </div>
      {stream.failing_since && <div className="muted">Failing since {formatDateTime(stream.failing_since)}</div>}
      {stream.last_error && (
        <div className="muted stream-error" title={stream.last_error}>
          Last error{stream.last_error_at ? ` at ${formatDateTime(stream.last_error_at)}` : ''}: {stream.last_error.slice(0, 120)}
        </div>
      )}
    </div>
  );
}

/**
 * Deliveries per minute over the last hour: events delivered as bars, and below them a lane of their
 * own for failed attempts (a handful of failures beside hundreds of events would be invisible on one
 * scale), with a legend that counts both.
 */
function History({ history }: { history: StreamView['history'] }) {
  const now = Date.now();
  const minutes = Array.from({ length: 60 }, (_, i) => {
    const at = Math.floor(now / 60_000) * 60_000 - (59 - i) * 60_000;
    return history.find((h) => Date.parse(h.minute) === at) ?? { minute: new Date(at).toISOString(), delivered: 0, failed: 0 };
  });
  const maxDelivered = Math.max(1, ...minutes.map((m) => m.delivered));
  const maxFailed = Math.max(1, ...minutes.map((m) => m.failed));
  const delivered = minutes.reduce((n, m) => n + m.delivered, 0);
  const failed = minutes.reduce((n, m) => n + m.failed, 0);
  const summary = `${plural(delivered, 'event')} delivered, ${plural(failed, 'failed attempt')} in the last hour`;
  return (
    <div className="stream-history-box">
      <svg className="stream-history" viewBox="0 0 120 34" width={120} height={34} role="img" aria-label={summary}>
        <line x1={0} y1={22.5} x2={120} y2={22.5} className="baseline" />
        {minutes.map((m, i) => {
          const hd = (m.delivered / maxDelivered) * 21;
          const hf = 5 + (m.failed / maxFailed) * 6;
          return (
            <g key={m.minute}>
              {m.delivered > 0 && <rect x={i * 2} y={22 - Math.max(1, hd)} width={1.7} height={Math.max(1, hd)} className="bar" />}
              {m.failed > 0 && <rect x={i * 2} y={23} width={1.7} height={hf} className="bar failed" />}
            </g>
          );
        })}
      </svg>
      <div className="stream-legend small" data-testid="stream-history-legend">
        <span><i className="swatch delivered" aria-hidden="true" />{plural(delivered, 'event')} delivered</span>
        <span className={failed > 0 ? 'failed-count' : undefined}><i className="swatch failed" aria-hidden="true" />{plural(failed, 'failed attempt')}</span>
      </div>
    </div>
  );
}
