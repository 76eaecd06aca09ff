/**
 * HTTPS webhooks signed per the Standard Webhooks specification: `webhook-id` (stable across retries of
 * a batch), `webhook-timestamp` (seconds), `webhook-signature: v1,<base64 HMAC-SHA256 of
 * "id.timestamp.body">` with the stream's `whsec_` secret. The body is a JSON array of the batch's
 * events; the batch's checkpoint rides in `audit-ledger-checkpoint` (base64 of the signed note), its
 * sequence numbers in `audit-ledger-sequence`. Any 2xx acknowledges the batch.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { DeliveryBatch, Destination } from '../batch';
import type { OutboundHttp } from '../outboundHttp';

/** A new signing secret, in the specification's form. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export function signWebhook(secret: string, id: string, timestamp: number, body: Buffer): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64')}`;
}

export class WebhookDestination implements Destination {
  readonly limits = { maxEvents: 500, maxBytes: 1024 * 1024 };

  constructor(
    private readonly http: OutboundHttp,
    private readonly url: string,
    private readonly secret: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async send(batch: DeliveryBatch): Promise<number> {
    const body = Buffer.from(`[${batch.items.join(',')}]`);
    const id = batch.first === 0 ? `msg_${batch.streamId}_test_${randomBytes(6).toString('hex')}` : `msg_${batch.streamId}_${batch.first}_${batch.last}`;
    const timestamp = Math.floor(this.now().getTime() / 1000);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(this.secret, id, timestamp, body),
      'audit-ledger-stream': batch.streamId,
      'audit-ledger-sequence': `${batch.first}-${batch.last}`,
    };
    if (batch.checkpoint) headers['audit-ledger-checkpoint'] = Buffer.from(batch.checkpoint.note).toString('base64');
    return (await this.http.request('POST', this.url, headers, body)).status;
  }
}
