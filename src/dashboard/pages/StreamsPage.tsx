/** Log streams: create (a webhook's signing secret shown once), test, pause, resume, delete; each stream's state, lag, last delivery and error, and its deliveries per minute. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type SubmitEvent, useState } from 'react';
import { ShownOnce } from '../components/ShownOnce';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { formatDateTime, formatNumber, formatRelative } from '../lib/format';
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
            <table className="table">
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
    create.mutate();
  };
  return (
    <section className="card">
      <h2>Create a stream</h2>
      <form className="stack-form" onSubmit={submit}>
        <div className="inline-form">
          <label className="field grow">
            <span>Name</span>
            <input name="stream-name" value={name} onChange={(e) => setName(e.target.value)} maxLength={100} required placeholder="e.g. SIEM" />
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
                required={!field.optional}
                onChange={(e) => setValues({ ...values, [field.name]: e.target.value })}
              />
            </label>
          ))}
          <label className="field">
            <span>Start at sequence number</span>
            <input name="stream-start" inputMode="numeric" pattern="[1-9][0-9]*" value={start} onChange={(e) => setStart(e.target.value)} placeholder="next event" />
          </label>
        </div>
        <div>
          <button type="submit" className="button primary" disabled={create.isPending || name.trim() === ''}>
            {create.isPending ? 'Creating…' : 'Create stream'}
          </button>
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

function StreamRow({ stream, onChanged }: { stream: StreamView; onChanged: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [tested, setTested] = useState<string | null>(null);
  const act = useMutation({
    mutationFn: async (what: 'pause' | 'resume' | 'remove' | 'test') => {
      if (what === 'test') {
        const result = await trpc.dashboard.streams.test.mutate({ id: stream.id });
        setTested(result.ok ? 'Test delivery acknowledged' : `Test delivery failed: ${result.error ?? 'no answer'}`);
        return;
      }
      await trpc.dashboard.streams[what].mutate({ id: stream.id });
    },
    onSuccess: onChanged,
  });
  return (
    <tr data-testid={`stream-row-${stream.name}`}>
      <td data-label="Name">
        {stream.name}
        <div className="muted small">{stream.format === 'ocsf' ? 'OCSF' : 'JSON'}, from #{formatNumber(stream.start_seq)}</div>
      </td>
      <td data-label="Destination">
        <span className="badge">{stream.destination.type}</span> <code className="small">{destinationText(stream.destination)}</code>
      </td>
      <td data-label="State">
        <span className={`badge stream-${stream.state}`} data-testid="stream-state">{stream.state}</span>
        {stream.last_error && <div className="muted small" title={stream.last_error}>Last error: {stream.last_error.slice(0, 120)}</div>}
      </td>
      <td data-label="Lag" data-testid="stream-lag">
        {formatNumber(stream.lag_events)} events{stream.lag_seconds !== null && <div className="muted small">{Math.round(stream.lag_seconds)} s behind</div>}
      </td>
      <td data-label="Last delivery" title={stream.last_delivery_at ? formatDateTime(stream.last_delivery_at) : undefined}>
        {stream.last_delivery_at ? formatRelative(stream.last_delivery_at) : 'Never'}
        <div className="muted small">through #{formatNumber(stream.delivered_seq)}</div>
      </td>
      <td data-label="Deliveries">
        <History history={stream.history} />
      </td>
      <td className="actions">
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
        {tested && <div className="small" role="status" data-testid="stream-test-result">{tested}</div>}
        {act.isError && <div className="form-error small" role="alert">{errorMessage(act.error)}</div>}
      </td>
    </tr>
  );
}

/** Deliveries per minute over the last hour as small bars (failed attempts in the danger colour), with a text summary. */
function History({ history }: { history: StreamView['history'] }) {
  const now = Date.now();
  const minutes = Array.from({ length: 60 }, (_, i) => {
    const at = Math.floor(now / 60_000) * 60_000 - (59 - i) * 60_000;
    return history.find((h) => Date.parse(h.minute) === at) ?? { minute: new Date(at).toISOString(), delivered: 0, failed: 0 };
  });
  const max = Math.max(1, ...minutes.map((m) => m.delivered + m.failed));
  const delivered = minutes.reduce((n, m) => n + m.delivered, 0);
  const failed = minutes.reduce((n, m) => n + m.failed, 0);
  return (
    <svg className="stream-history" viewBox="0 0 120 24" width={120} height={24} role="img" aria-label={`${formatNumber(delivered)} events delivered and ${formatNumber(failed)} failed attempts in the last hour`}>
      {minutes.map((m, i) => {
        const hd = (m.delivered / max) * 22;
        const hf = (m.failed / max) * 22;
        return (
          <g key={m.minute}>
            {hd > 0 && <rect x={i * 2} y={24 - hd} width={1.6} height={Math.max(1, hd)} className="bar" />}
            {hf > 0 && <rect x={i * 2} y={24 - hd - Math.max(1, hf)} width={1.6} height={Math.max(1, hf)} className="bar failed" />}
          </g>
        );
      })}
    </svg>
  );
}
