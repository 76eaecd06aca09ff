/**
 * Log streams: what an organization configures (a destination, a format, a start point) and what it
 * sees of a stream. The schemas are the one source for validation, the REST surface and openapi.json.
 * Secrets (tokens, keys) are accepted on create and never appear in any output.
 */
import { z } from 'zod';
import { text } from './text';

/** How an instance delivers streams: each is a setting (docs/configuration.md). */
export interface StreamOptions {
  /** How often the list of streams is read (new, paused, deleted streams; instances come and go). */
  scanIntervalMs: number;
  /** How often a caught-up stream looks for newly signed events. */
  pollMs: number;
  /** A run of failures longer than this marks the stream failing. */
  failingAfterMs: number;
  /** The longest wait between two attempts. */
  maxBackoffMs: number;
  /** Sends in flight at once, all streams of this instance together. */
  concurrency: number;
  /** Outbound requests' deadline. */
  timeoutMs: number;
  /** Destinations may be loopback or private addresses and plain http (STREAM_ALLOW_PRIVATE_DESTINATIONS). */
  allowPrivate: boolean;
}

/** Streams per organization: each is a delivery loop, a cursor and a destination's connections. */
export const MAX_STREAMS_PER_ORG = 5;

const url = text()
  .max(2048)
  .refine((value) => {
    try {
      const parsed = new URL(value);
      return (parsed.protocol === 'https:' || parsed.protocol === 'http:') && parsed.username === '' && parsed.password === '';
    } catch {
      return false;
    }
  }, 'must be an http(s) URL without credentials');
const secret = () => text().min(1).max(1024);
const label = (max: number) => text().max(max);

export const ZWebhookDestination = z.strictObject({
  type: z.literal('webhook'),
  url: url.meta({ description: 'Receives a POST per batch: a JSON array, signed per Standard Webhooks' }),
});
export const ZSplunkDestination = z.strictObject({
  type: z.literal('splunk'),
  url: url.meta({ description: 'The HTTP Event Collector\'s base URL, e.g. https://splunk.example.com:8088 (events go to /services/collector/event)' }),
  token: secret().meta({ description: 'The HEC token (write-only)' }),
  index: label(256).optional(),
  sourcetype: label(256).optional(),
});
export const ZDatadogDestination = z.strictObject({
  type: z.literal('datadog'),
  url: url.meta({ description: 'The Logs intake of the Datadog site, e.g. https://http-intake.logs.datadoghq.com (events go to /api/v2/logs)' }),
  api_key: secret().meta({ description: 'A Datadog API key (write-only)' }),
  service: label(256).optional(),
  tags: label(1024).optional().meta({ description: 'ddtags, comma-separated' }),
});
export const ZS3Destination = z.strictObject({
  type: z.literal('s3'),
  endpoint: url.optional().meta({ description: 'An S3-compatible endpoint; AWS S3 when absent' }),
  region: text().min(1).max(64),
  bucket: text().min(3).max(63),
  prefix: label(512).optional().meta({ description: 'Prepended to every object key' }),
  path_style: z.boolean().optional().meta({ description: 'Path-style addressing (most S3-compatible servers need it)' }),
  access_key_id: secret(),
  secret_access_key: secret().meta({ description: 'Write-only' }),
});

export const ZStreamDestinationInput = z.discriminatedUnion('type', [ZWebhookDestination, ZSplunkDestination, ZDatadogDestination, ZS3Destination]);
export type TStreamDestinationInput = z.infer<typeof ZStreamDestinationInput>;
export type StreamDestinationType = TStreamDestinationInput['type'];

/** The fields of each destination that are secrets: sealed at rest, never returned. */
export const SECRET_FIELDS = { webhook: [], splunk: ['token'], datadog: ['api_key'], s3: ['secret_access_key'] } as const satisfies Record<StreamDestinationType, readonly string[]>;

/** A destination as stored and shown: its secrets taken out. */
export type StreamDestination =
  | Omit<z.infer<typeof ZWebhookDestination>, never>
  | Omit<z.infer<typeof ZSplunkDestination>, 'token'>
  | Omit<z.infer<typeof ZDatadogDestination>, 'api_key'>
  | Omit<z.infer<typeof ZS3Destination>, 'secret_access_key'>;

export const ZStreamDestinationView = z
  .discriminatedUnion('type', [
    ZWebhookDestination,
    ZSplunkDestination.omit({ token: true }),
    ZDatadogDestination.omit({ api_key: true }),
    ZS3Destination.omit({ secret_access_key: true }),
  ])
  .meta({ id: 'StreamDestination' });

/** Splits what the client sent into what may be shown and the secrets to seal. */
export function splitSecrets(input: TStreamDestinationInput): { destination: StreamDestination; secrets: Record<string, string> } {
  const secretFields: readonly string[] = SECRET_FIELDS[input.type];
  const entries = Object.entries(input);
  const destination = Object.fromEntries(entries.filter(([field]) => !secretFields.includes(field))) as StreamDestination;
  const secrets = Object.fromEntries(entries.filter(([field]) => secretFields.includes(field))) as Record<string, string>;
  return { destination, secrets };
}

export const STREAM_FORMATS = ['json', 'ocsf'] as const;
export type StreamFormat = (typeof STREAM_FORMATS)[number];

export const ZCreateStreamInput = z.strictObject({
  name: text().trim().min(1).max(100),
  destination: ZStreamDestinationInput,
  format: z.enum(STREAM_FORMATS).default('json').meta({ description: '`json`: each event as GET /v1/events/{id} returns it, with its ledger receipt; `ocsf`: OCSF 1.3.0 API Activity (class 6003)' }),
  start_seq: z.number().int().min(1).optional().meta({ description: 'The first sequence number to deliver (1: the whole log); from the next event when absent' }),
});
export type TCreateStreamInput = z.infer<typeof ZCreateStreamInput>;

export const ZStreamIdInput = z.strictObject({ id: text().min(1).max(100) });

export const STREAM_STATES = ['active', 'paused', 'failing'] as const;
export type StreamState = (typeof STREAM_STATES)[number];

export const ZStream = z
  .object({
    id: z.string(),
    name: z.string(),
    destination: ZStreamDestinationView,
    format: z.enum(STREAM_FORMATS),
    state: z.enum(STREAM_STATES).meta({ description: '`failing`: the last delivery attempt was refused or could not reach the destination (from the first such attempt until one is acknowledged); it is retried with backoff (`next_attempt_at`, or at once with POST /streams/{id}/retry), and the stream keeps its place. `paused` wins over `failing`' }),
    start_seq: z.number().int(),
    delivered_seq: z.number().int().meta({ description: 'Every event up to this sequence number was acknowledged by the destination' }),
    lag_events: z.number().int().meta({ description: 'Events stored and not acknowledged yet' }),
    lag_seconds: z.number().nullable().meta({ description: 'Age of the oldest event not acknowledged yet; null when caught up' }),
    last_delivery_at: z.string().nullable(),
    last_error: z.string().nullable().meta({ description: 'While failing: why the last attempt failed; null once a delivery is acknowledged' }),
    last_error_at: z.string().nullable().meta({ description: 'When that attempt failed' }),
    failing_since: z.string().nullable().meta({ description: 'When the current run of failed attempts began; null when the last attempt succeeded' }),
    next_attempt_at: z.string().nullable().meta({ description: 'While failing: when the next attempt is due (backoff with jitter, or what Retry-After asked)' }),
    created_at: z.string(),
    history: z.array(z.object({ minute: z.string(), delivered: z.number().int(), failed: z.number().int() })).meta({ description: 'Deliveries per minute over the last hour' }),
  })
  .meta({ id: 'Stream' });
export type TStream = z.infer<typeof ZStream>;

export const ZCreatedStream = ZStream.extend({
  signing_secret: z.string().nullable().meta({ description: 'Webhook streams: the Standard Webhooks secret (`whsec_…`) the receiver verifies signatures with. Shown only here' }),
}).meta({ id: 'CreatedStream' });

export const ZStreamList = z.object({ data: z.array(ZStream) });

export const ZStreamTestResult = z.object({
  ok: z.boolean(),
  status: z.number().int().nullable().meta({ description: 'The destination\'s HTTP status, when it answered' }),
  error: z.string().nullable(),
  retrying: z.boolean().meta({ description: 'The test was acknowledged and the stream was failing: it is retried now, and that delivery of its events decides its state' }),
});
export type TStreamTestResult = z.infer<typeof ZStreamTestResult>;
