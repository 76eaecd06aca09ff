/** The self-audit outbox (AuditOutboxDoc): the admin CLI adds, a running instance writes and removes. */
import { v7 as uuidv7 } from 'uuid';
import type { AuditActor, AuditResource, SelfAuditAction } from '../domain/selfAudit';
import type { AuditOutboxDoc } from './documents';
import type { Collections } from './database';

export class AuditOutbox {
  constructor(private readonly c: Collections) {}

  async add(tenant: string, actor: AuditActor, action: SelfAuditAction, resource: AuditResource, metadata: Record<string, unknown>, at: Date): Promise<void> {
    await this.c.auditOutbox.insertOne({ _id: uuidv7(), tenant, actor, action, resource, metadata, at });
  }

  /** Everything waiting, oldest first (ids are UUIDv7: time-ordered). */
  async waiting(): Promise<AuditOutboxDoc[]> {
    return this.c.auditOutbox.find({}).sort({ _id: 1 }).toArray();
  }

  async remove(id: string): Promise<void> {
    await this.c.auditOutbox.deleteOne({ _id: id });
  }
}
