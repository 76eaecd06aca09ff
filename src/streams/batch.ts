/** One delivery: a run of consecutive events of one stream, formatted, with the checkpoint that covers them. */
export interface DeliveryBatch {
  streamId: string;
  tenant: string;
  /** Sequence numbers of the first and the last event (0 and 0 for a test delivery). */
  first: number;
  last: number;
  /** The events in the stream's format as JSON text, in sequence order (made once, sent as they are). */
  items: string[];
  /** Each event's own timestamp (ms since the epoch), where a destination wants it beside the event. */
  times: number[];
  /** When the first event was received (an S3 object's date). */
  receivedAt: Date;
  /** The newest signed checkpoint of the organization's log, which includes every event of the batch. */
  checkpoint: { size: number; note: string } | null;
}

/** What a destination accepts in one request. */
export interface BatchLimits {
  maxEvents: number;
  maxBytes: number;
}

/** Where a stream's batches go: one request per batch, rejecting with a DeliveryError unless acknowledged. */
export interface Destination {
  readonly limits: BatchLimits;
  /** Resolves with the HTTP status that acknowledged the batch (a test delivery reports it); null when the client does not say. */
  send(batch: DeliveryBatch): Promise<number | null>;
}

/** The batch's checkpoint as the deliveries carry it: its size and the signed note's text. */
export function checkpointRecord(batch: DeliveryBatch): { audit_ledger_checkpoint: { origin_tenant: string; size: number; note: string } } | null {
  return batch.checkpoint ? { audit_ledger_checkpoint: { origin_tenant: batch.tenant, size: batch.checkpoint.size, note: batch.checkpoint.note } } : null;
}
