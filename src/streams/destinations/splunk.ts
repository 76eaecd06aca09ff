/**
 * Splunk's HTTP Event Collector: `POST <url>/services/collector/event` with `Authorization: Splunk
 * <token>`, a body of concatenated JSON event objects (`time` in epoch seconds, `source`, `sourcetype`,
 * optional `index`, and the event under `event`). The batch's checkpoint is one more object, of
 * sourcetype `audit_ledger:checkpoint`. Splunk answers 200 `{"text":"Success","code":0}`.
 */
import { checkpointRecord, type DeliveryBatch, type Destination } from '../batch';
import type { OutboundHttp } from '../outboundHttp';

export class SplunkDestination implements Destination {
  // HEC's documented default max_content_length is 1 MB on Splunk Cloud; stay under it.
  readonly limits = { maxEvents: 1000, maxBytes: 900 * 1024 };

  constructor(
    private readonly http: OutboundHttp,
    private readonly config: { url: string; index?: string | undefined; sourcetype?: string | undefined },
    private readonly token: string,
  ) {}

  async send(batch: DeliveryBatch): Promise<number> {
    // The event goes in as the JSON text it already is; the envelope's fields around it.
    const envelope = (event: string, sourcetype: string, time: number) => {
      const fields = JSON.stringify({ time, host: 'audit-ledger', source: `audit-ledger:${batch.tenant}`, sourcetype, ...(this.config.index && { index: this.config.index }) });
      return `${fields.slice(0, -1)},"event":${event}}`;
    };
    const lines = batch.items.map((item, i) => envelope(item, this.config.sourcetype ?? 'audit_ledger:event', (batch.times[i] ?? Date.now()) / 1000));
    const checkpoint = checkpointRecord(batch);
    if (checkpoint) lines.push(envelope(JSON.stringify(checkpoint), 'audit_ledger:checkpoint', Date.now() / 1000));
    const url = `${this.config.url.replace(/\/+$/, '')}/services/collector/event`;
    return (await this.http.request('POST', url, { authorization: `Splunk ${this.token}`, 'content-type': 'application/json' }, Buffer.from(lines.join('\n')))).status;
  }
}
