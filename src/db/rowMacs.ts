/**
 * Which fields of each stored row its MAC covers (domain/ledger/rowMac.ts), and the seal and check of
 * each kind. What gives a row its meaning is covered: its organization, its place (sequence number, or
 * index), its id and what its leaf commits to (the event's whole content, through its hash), how and by
 * which entry a tombstone's event was removed, an entry's body and an outbox record's every field.
 */
import type { LeafCommit } from '../domain/ledger/formats';
import type { RowFields, RowMac } from '../domain/ledger/rowMac';
import { type AuditOutboxDoc, type EventDoc, isTombstone, leafCommitOfDoc, type LedgerEntryDoc, type StoredEvent, type TombstoneDoc } from './documents';

/**
 * An event's: its place, what its leaf commits to, and its time of receipt, which the leaf does not
 * cover but a prune chooses by (a time set back in the database must not make the service prune it).
 */
function eventFields(doc: Pick<EventDoc, 'tenant' | 'seq' | '_id' | 'month' | 'month_seq' | 'received_at'>, commit: LeafCommit): RowFields {
  return [doc.tenant, doc.seq, doc._id, doc.month, doc.month_seq, doc.received_at instanceof Date ? doc.received_at.getTime() : null, commit.v, commit.hash];
}

function tombstoneFields(doc: TombstoneDoc): RowFields {
  return [doc.tenant, doc.seq, doc._id, doc.month, doc.month_seq, doc.removed, doc.removed_by, doc.leaf_v, Buffer.from(doc.leaf.buffer).toString('hex')];
}

function entryFields(doc: Omit<LedgerEntryDoc, 'mac'>): RowFields {
  return [doc._id, doc.tenant, doc.checkpoint, doc.body];
}

function outboxFields(doc: Omit<AuditOutboxDoc, 'mac'>): RowFields {
  return [doc._id, doc.tenant, JSON.stringify(doc.actor), doc.action, JSON.stringify(doc.resource), JSON.stringify(doc.metadata), doc.at.toISOString()];
}

/** The MAC of an event placed at its number, whose leaf commits to `commit` (computed once by the writer). */
export function eventMac(mac: RowMac, doc: Pick<EventDoc, 'tenant' | 'seq' | '_id' | 'month' | 'month_seq' | 'received_at'>, commit: LeafCommit): string {
  return mac.of('event', eventFields(doc, commit));
}

/** `doc` with its MAC: a tombstone's. */
export function sealTombstone(mac: RowMac, doc: TombstoneDoc): TombstoneDoc {
  return { ...doc, mac: mac.of('tombstone', tombstoneFields(doc)) };
}

export function sealEntry(mac: RowMac, doc: Omit<LedgerEntryDoc, 'mac'>): LedgerEntryDoc {
  return { ...doc, mac: mac.of('entry', entryFields(doc)) };
}

export function sealOutbox(mac: RowMac, doc: Omit<AuditOutboxDoc, 'mac'>): AuditOutboxDoc {
  return { ...doc, mac: mac.of('outbox', outboxFields(doc)) };
}

/** The MAC a stored event or tombstone would carry as the service's own (an upgrade's or a reseal's seal). */
export function rowMacOf(mac: RowMac, doc: StoredEvent, commit: LeafCommit): string {
  return isTombstone(doc) ? mac.of('tombstone', tombstoneFields(doc)) : eventMac(mac, doc, commit);
}

/**
 * Whether a stored event or tombstone is the service's own: its MAC is valid for what it holds now.
 * `commit`: the event's leaf commitment when the caller computed it already (it costs a canonical JSON
 * and a SHA-256 of the event).
 */
export function isOwnStored(mac: RowMac, doc: StoredEvent, commit?: LeafCommit): boolean {
  if (isTombstone(doc)) return mac.valid('tombstone', tombstoneFields(doc), doc.mac);
  let leaf = commit;
  if (!leaf) {
    try {
      leaf = leafCommitOfDoc(doc);
    } catch {
      // A row whose fields cannot even be hashed (a malformed salt, say) was not written by the service.
      return false;
    }
  }
  return mac.valid('event', eventFields(doc, leaf), doc.mac);
}

export function isOwnEntry(mac: RowMac, doc: LedgerEntryDoc): boolean {
  return mac.valid('entry', entryFields(doc), doc.mac);
}

export function isOwnOutbox(mac: RowMac, doc: AuditOutboxDoc): boolean {
  if (!(doc.at instanceof Date)) return false;
  return mac.valid('outbox', outboxFields(doc), doc.mac);
}
