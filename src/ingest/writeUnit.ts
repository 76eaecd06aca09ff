/**
 * What a caller hands to ingest: its events, all of one organization, written as one unit (placed
 * together, refused together, answered together once every one is stored). The same unit goes from the
 * idempotency service through `Ingest` to the writer, here or, over the forward wire, at another instance.
 */
import type { EventDoc } from '../db/documents';

/** An event ready to store, before the writer gives it its place in the organization's sequence. */
export type EventDraft = Omit<EventDoc, 'seq' | 'month' | 'month_seq'>;

export interface WriteUnit {
  /** One or more events of one organization, in order. */
  drafts: EventDraft[];
  /**
   * The hash of the API key that sent them: checked again, for the whole round, just before the write.
   * Null for the service's own records of changes to an organization (services/selfAudit.ts): made in
   * this process, written here (never forwarded, never read from the wire) and counted against no cap.
   */
  keyHash: string | null;
  /**
   * The cap counted these events already: some of them may be stored (the request that first sent them
   * died midway, or a round lost a race midway), and a unit once begun is completed. Only an
   * idempotency claim that names every one of the events backs it (checked where a forward arrives).
   */
  capExempt: boolean;
}

/** The organization a unit writes to (every draft's). */
export function unitTenant(unit: WriteUnit): string {
  const first = unit.drafts[0];
  if (!first) throw new RangeError('a write unit holds at least one event');
  return first.tenant;
}

/** A unit an API key sent: the only kind that travels between instances. */
export type KeyedWriteUnit = WriteUnit & { keyHash: string };
