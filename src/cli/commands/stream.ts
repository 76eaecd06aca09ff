/**
 * Log streams from the command line: manage them over the REST API (`--url`, `--key`: an API key of the
 * organization), and check what one delivered, offline (`stream verify`).
 */
import { type Command, need, opt, str, UsageError, type Values } from '../command';
import { runVerifyStream } from '../verifyStreamCommand';

async function rest(values: Values, method: string, path: string, body?: unknown): Promise<unknown> {
  const url = need(values, 'url').replace(/\/+$/, '');
  const res = await fetch(`${url}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${need(values, 'key')}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  if (!res.ok) throw new Error(`${method} /v1${path}: ${res.status} ${typeof parsed === 'object' && parsed !== null && 'message' in parsed ? String(parsed.message) : text}`);
  return parsed;
}

interface StreamView extends Record<string, unknown> {
  id: string;
  name: string;
  state: string;
  destination: { type: string };
  delivered_seq: number;
  lag_events: number;
  last_error: string | null;
}

const line = (s: StreamView) => `${s.id}  ${s.name}  ${s.destination.type}  ${s.state}  delivered to ${s.delivered_seq}, ${s.lag_events} behind${s.last_error ? `  (last error: ${s.last_error})` : ''}`;

/** The destination from the flags: each type's fields, secrets included (they go to the service only). */
function destinationOf(values: Values): Record<string, unknown> {
  const type = need(values, 'type');
  const pick = (...names: string[]): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const name of names) {
      const value = opt(values, name);
      if (value !== undefined) out[name.replace(/-/g, '_')] = value;
    }
    return out;
  };
  switch (type) {
    case 'webhook': return { type, ...pick('url') };
    case 'splunk': return { type, ...pick('url', 'token', 'index', 'sourcetype') };
    case 'datadog': return { type, ...pick('url', 'api-key', 'service', 'tags') };
    case 's3': return { type, ...pick('endpoint', 'region', 'bucket', 'prefix', 'access-key-id', 'secret-access-key'), ...(opt(values, 'path-style') === 'true' && { path_style: true }) };
    default: throw new UsageError(`--type must be webhook, s3, splunk or datadog, not ${type}`);
  }
}

const ONE = { url: str, key: str } as const;

const action = (words: string, summary: string, method: string, suffix: string): Command => ({
  words: `stream ${words}`,
  summary,
  synopsis: '--url URL --key KEY STREAM_ID',
  options: ONE,
  positionals: { min: 1, max: 1 },
  async run(values, [id]) {
    const answer = (await rest(values, method, `/streams/${encodeURIComponent(id ?? '')}${suffix}`, method === 'POST' ? {} : undefined)) as StreamView;
    return { json: answer, text: 'id' in answer ? line(answer) : JSON.stringify(answer) };
  },
});

export const streamCommands: Command[] = [
  {
    words: 'stream create',
    summary: 'create a log stream (a webhook\'s signing secret is printed once)',
    synopsis: '--url URL --key KEY --name NAME --type webhook|s3|splunk|datadog [--format json|ocsf] [--start-seq N]\n' +
      '       [--to URL] [--token T] [--index I] [--sourcetype S] [--api-key K] [--service S] [--tags T]\n' +
      '       [--endpoint URL] [--region R] [--bucket B] [--prefix P] [--access-key-id ID] [--secret-access-key S] [--path-style true]',
    details: '--to is the destination\'s URL (webhook, Splunk HEC base URL, Datadog intake); --url is the Audit Ledger service. Without --start-seq the stream starts at the next event; --start-seq 1 back-fills the whole log.',
    options: {
      ...ONE, name: str, type: str, format: str, 'start-seq': str, to: str, token: str, index: str, sourcetype: str, 'api-key': str, service: str, tags: str,
      endpoint: str, region: str, bucket: str, prefix: str, 'access-key-id': str, 'secret-access-key': str, 'path-style': str,
    },
    async run(values) {
      const destination = destinationOf({ ...values, url: values.to });
      const start = opt(values, 'start-seq');
      if (start !== undefined && !/^[1-9]\d*$/.test(start)) throw new UsageError('--start-seq must be a positive whole number');
      const created = (await rest(values, 'POST', '/streams', {
        name: need(values, 'name'),
        destination,
        ...(opt(values, 'format') && { format: opt(values, 'format') }),
        ...(start && { start_seq: Number(start) }),
      })) as StreamView & { signing_secret: string | null };
      const secret = created.signing_secret ? `\nSigning secret (shown once; the receiver verifies webhook-signature with it): ${created.signing_secret}` : '';
      return { json: created, text: `${line(created)}${secret}` };
    },
  },
  {
    words: 'stream list',
    summary: 'the organization\'s log streams, with state and lag',
    synopsis: '--url URL --key KEY',
    options: ONE,
    async run(values) {
      const list = (await rest(values, 'GET', '/streams')) as { data: StreamView[] };
      return { json: list, text: list.data.map(line).join('\n') || 'No streams.' };
    },
  },
  action('pause', 'pause a stream (it keeps its place)', 'POST', '/pause'),
  action('resume', 'resume a stream from where it stopped', 'POST', '/resume'),
  action('test', 'send one test item to the stream\'s destination', 'POST', '/test'),
  action('delete', 'delete a stream', 'DELETE', ''),
  {
    words: 'stream verify',
    summary: 'check a directory of delivered stream objects offline against the signed checkpoints (exit 1 on any failure)',
    synopsis: '--verifier-key VKEY [--checkpoint FILE] DIR',
    details: 'DIR holds what the stream delivered: an S3 stream\'s .jsonl.gz objects as downloaded, or .jsonl files of webhook batches (one item per line and the batch\'s audit_ledger_checkpoint line). --checkpoint FILE: a signed checkpoint got apart from the delivery (the `checkpoint` of GET /v1/ledger/checkpoint) that the delivery must reach, so that objects deleted from its end are caught too.',
    options: { 'verifier-key': str, checkpoint: str },
    positionals: { min: 1, max: 1 },
    async run(values, [dir]) {
      const summary = await runVerifyStream({ verifierKey: need(values, 'verifier-key'), dir: dir ?? '', checkpoint: opt(values, 'checkpoint') });
      const verdict = !summary.ok
        ? 'NOT VERIFIED'
        : summary.verified_size > 0
          ? `VERIFIED: the delivered events are exactly the leaves 1–${summary.verified_size} of ${summary.organization}'s signed log, in order`
          : 'VERIFIED (HASHES AND ORDER ONLY): no checkpoint root could be recomputed';
      return { json: summary, text: [...summary.verdicts.map((v) => `${v.ok ? 'ok  ' : 'FAIL'}  ${v.check}`), verdict].join('\n'), exitCode: summary.ok ? 0 : 1 };
    },
  },
];
