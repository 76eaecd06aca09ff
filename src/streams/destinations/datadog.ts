/**
 * Datadog's Logs intake (API v2): `POST <url>/api/v2/logs` with `DD-API-KEY`, a JSON array of log
 * entries (`ddsource`, `ddtags`, `hostname`, `service`, `message`: the item as JSON text, which Datadog
 * parses into attributes). Documented limits: 5 MB per request before compression, 1,000 entries, 1 MB
 * per entry. The batch's checkpoint is one more entry, with `ddsource: audit-ledger-checkpoint`.
 * Datadog answers 202.
 */
import { checkpointRecord, type DeliveryBatch, type Destination } from '../batch';
import type { OutboundHttp } from '../outboundHttp';

export class DatadogDestination implements Destination {
  // One entry is kept free for the checkpoint.
  readonly limits = { maxEvents: 999, maxBytes: 4 * 1024 * 1024 };

  constructor(
    private readonly http: OutboundHttp,
    private readonly config: { url: string; service?: string | undefined; tags?: string | undefined },
    private readonly apiKey: string,
  ) {}

  async send(batch: DeliveryBatch): Promise<number> {
    const entry = (message: string, ddsource: string) => ({
      ddsource,
      ddtags: [`audit_ledger_org:${batch.tenant}`, this.config.tags].filter(Boolean).join(','),
      hostname: 'audit-ledger',
      service: this.config.service ?? 'audit-ledger',
      message,
    });
    const entries = batch.items.map((item) => entry(item, 'audit-ledger'));
    const checkpoint = checkpointRecord(batch);
    if (checkpoint) entries.push(entry(JSON.stringify(checkpoint), 'audit-ledger-checkpoint'));
    const url = `${this.config.url.replace(/\/+$/, '')}/api/v2/logs`;
    return (await this.http.request('POST', url, { 'dd-api-key': this.apiKey, 'content-type': 'application/json' }, Buffer.from(JSON.stringify(entries)))).status;
  }
}
