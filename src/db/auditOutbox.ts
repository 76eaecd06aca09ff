/**
 * The self-audit outbox (AuditOutboxDoc): the admin CLI adds, a running instance writes and removes.
 * Anyone who can write the database can write here too, so each record is sealed with the row key
 * (db/rowMacs.ts `sealOutbox`, from the key file) and the drain takes only sealed records of the kinds
 * the CLI makes (`isOperatorRecord`); anything else is foreign and moved aside (`moveAside`).
 */
import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import type { RowMac } from '../domain/ledger/rowMac';
import type { AuditResource } from '../domain/selfAudit';
import type { AuditOutboxDoc } from './documents';
import type { Collections } from './database';
import { sealOutbox } from './rowMacs';

/** What the admin CLI records, and the type of resource each names: the only kinds the outbox carries. */
export const OPERATOR_RECORDS = {
  'audit_ledger.organization.created': 'organization',
  'audit_ledger.key.created': 'api_key',
  'audit_ledger.key.revoked': 'api_key',
  'audit_ledger.key.producer_bound': 'api_key',
} as const;

export type OperatorAction = keyof typeof OPERATOR_RECORDS;

/**
 * Whether a record is of a kind the admin CLI makes: one of its actions, by the operator, on the
 * resource that action names (an organization's creation names the organization itself). Never a
 * retention entry, which verifiers take as authority to remove events.
 */
export function isOperatorRecord(doc: AuditOutboxDoc): boolean {
  if (!Object.hasOwn(OPERATOR_RECORDS, doc.action)) return false;
  const actor: unknown = doc.actor;
  const resource: unknown = doc.resource;
  if (typeof actor !== 'object' || actor === null || Object.keys(actor).join() !== 'type' || (actor as { type: unknown }).type !== 'operator') return false;
  if (typeof resource !== 'object' || resource === null) return false;
  const { type, id } = resource as { type: unknown; id: unknown };
  if (type !== OPERATOR_RECORDS[doc.action as OperatorAction] || typeof id !== 'string') return false;
  return doc.action !== 'audit_ledger.organization.created' || id === doc.tenant;
}

export class AuditOutbox {
  constructor(private readonly c: Pick<Collections, 'auditOutbox' | 'foreignRows'>) {}

  /** Leaves the operator's record, sealed with `mac` (the key file's row key) so the drain knows it for the CLI's. */
  async add(mac: RowMac, tenant: string, action: OperatorAction, resource: AuditResource, metadata: Record<string, unknown>, at: Date): Promise<void> {
    await this.c.auditOutbox.insertOne(sealOutbox(mac, { _id: uuidv7(), tenant, actor: { type: 'operator' }, action, resource, metadata, at }));
  }

  /** Everything waiting, oldest first (ids are UUIDv7: time-ordered). */
  async waiting(): Promise<AuditOutboxDoc[]> {
    return this.c.auditOutbox.find({}).sort({ _id: 1 }).toArray();
  }

  async remove(id: string): Promise<void> {
    await this.c.auditOutbox.deleteOne({ _id: id });
  }

  /** Moves a foreign record out of the outbox: a copy into `foreign_rows` (evidence), then its removal. */
  async moveAside(doc: AuditOutboxDoc, where: string, at: Date): Promise<void> {
    await this.c.foreignRows.insertOne({ _id: randomUUID(), kind: 'outbox', where, found_at: at, row: { ...doc } });
    await this.c.auditOutbox.deleteOne({ _id: doc._id });
  }
}
