/**
 * S3-compatible object storage: one gzip'd newline-delimited JSON object per batch, at
 * `<prefix><org>/<yyyy>/<mm>/<dd>/<first seq>-<last seq>.jsonl.gz` (sequence numbers zero-padded to 12
 * digits, so keys sort by sequence within a day and days sort by date; the date is the first event's
 * receipt, UTC). The object's last line is the batch's checkpoint (`{"audit_ledger_checkpoint": …}`).
 * Written with SigV4 by the AWS SDK, through the streams' guarded connections. Writing the same batch
 * again writes the same key: a retry replaces, never duplicates.
 */
import { gzipSync } from 'node:zlib';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { checkpointRecord, type DeliveryBatch, type Destination } from '../batch';
import { DeliveryError, toDeliveryError, type OutboundHttp } from '../outboundHttp';

export interface S3Config {
  endpoint?: string | undefined;
  region: string;
  bucket: string;
  prefix?: string | undefined;
  path_style?: boolean | undefined;
  access_key_id: string;
}

const pad = (n: number) => String(n).padStart(12, '0');

export function objectKey(prefix: string, batch: DeliveryBatch): string {
  const day = batch.receivedAt.toISOString().slice(0, 10).replace(/-/g, '/');
  const name = batch.first === 0 ? `test-${Date.now()}.jsonl.gz` : `${pad(batch.first)}-${pad(batch.last)}.jsonl.gz`;
  return `${prefix}${batch.tenant}/${day}/${name}`;
}

export class S3Destination implements Destination {
  readonly limits = { maxEvents: 5000, maxBytes: 8 * 1024 * 1024 };
  private readonly client: S3Client;

  constructor(
    http: OutboundHttp,
    private readonly config: S3Config,
    secretAccessKey: string,
  ) {
    if (config.endpoint) {
      const problem = http.problemWith(config.endpoint);
      if (problem) throw new DeliveryError(`the S3 endpoint ${problem}`);
    }
    this.client = new S3Client({
      region: config.region,
      ...(config.endpoint && { endpoint: config.endpoint }),
      forcePathStyle: config.path_style ?? false,
      credentials: { accessKeyId: config.access_key_id, secretAccessKey },
      requestHandler: new NodeHttpHandler({ httpAgent: http.httpAgent, httpsAgent: http.httpsAgent, requestTimeout: http.options.timeoutMs, connectionTimeout: http.options.timeoutMs }),
      // The stream retries with its own backoff; one attempt per send.
      maxAttempts: 1,
    });
  }

  async send(batch: DeliveryBatch): Promise<number | null> {
    const lines = [...batch.items];
    const checkpoint = checkpointRecord(batch);
    if (checkpoint) lines.push(JSON.stringify(checkpoint));
    const body = gzipSync(`${lines.join('\n')}\n`);
    try {
      const written = await this.client.send(new PutObjectCommand({
        Bucket: this.config.bucket,
        Key: objectKey(this.config.prefix ?? '', batch),
        Body: body,
        ContentType: 'application/x-ndjson',
        ContentEncoding: 'gzip',
      }));
      return written.$metadata.httpStatusCode ?? null;
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? null;
      if (status) throw new DeliveryError(`S3 ${status}: ${error instanceof Error ? error.message : String(error)}`, status);
      throw toDeliveryError(error);
    }
  }
}
