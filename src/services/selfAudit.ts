/**
 * Writes the service's own audit events (domain/selfAudit.ts) into the organization's log. A change is
 * recorded after it is made and its request answers once the record is stored: a change whose record
 * could not be written fails its request, which may be retried (every change here is idempotent to
 * repeat or refused the second time), so no change goes unrecorded without the caller being told.
 */
import type { TEventFilters } from '../domain/event';
import { type AuditActor, type SelfAuditAction, SELF_AUDIT_KEY_ID } from '../domain/selfAudit';
import type { Clock } from '../domain/time';
import type { Ingest } from '../ingest/ingest';
import { draftsOf, freshStamp } from './idempotency';
import type { Principal } from './auth';

export interface AuditResource {
  type: string;
  id: string;
  name?: string | null;
}

export class SelfAudit {
  constructor(
    private readonly ingest: Pick<Ingest, 'writeOwn'>,
    private readonly clock: Clock,
  ) {}

  async record(tenant: string, actor: AuditActor, action: SelfAuditAction, resource: AuditResource, metadata: Record<string, unknown> = {}): Promise<void> {
    const now = this.clock.now();
    const who = describe(actor);
    const content = {
      ts: null,
      actor_id: who.id,
      actor_name: who.name,
      actor_email: who.email,
      action,
      resource_type: resource.type,
      resource_id: resource.id,
      resource_name: resource.name ?? null,
      metadata: JSON.stringify({ actor_type: actor.type, ...(actor.type === 'member' ? { role: actor.role } : {}), ...metadata }),
      organization_id: tenant,
    };
    const keyId = actor.type === 'api_key' ? actor.keyId : SELF_AUDIT_KEY_ID;
    await this.ingest.writeOwn(draftsOf(tenant, [content], freshStamp(1, now, keyId)));
  }

  /** An export's record: what was exported, by whom. */
  exportRun(principal: Principal, format: string, filters: TEventFilters, treeSize: number): Promise<void> {
    return this.record(principal.tenant, actorOf(principal), 'audit_ledger.export.run', { type: 'export', id: `tree-${treeSize}` }, { format, filters, tree_size: treeSize });
  }
}

/** The actor of a request's principal. */
export function actorOf(principal: Principal): AuditActor {
  switch (principal.kind) {
    case 'apiKey': return { type: 'api_key', keyId: principal.keyId };
    case 'session': return { type: 'member', accountId: principal.accountId, email: principal.email, role: principal.role };
    case 'viewer': return { type: 'viewer_token', organizationId: principal.organizationId };
  }
}

function describe(actor: AuditActor): { id: string; name: string | null; email: string | null } {
  switch (actor.type) {
    case 'member': return { id: actor.accountId, name: actor.email, email: actor.email };
    case 'api_key': return { id: actor.keyId, name: null, email: null };
    case 'operator': return { id: 'operator', name: 'admin CLI', email: null };
    case 'viewer_token': return { id: `viewer:${actor.organizationId}`, name: null, email: null };
    case 'anonymous': return { id: 'anonymous', name: null, email: actor.email };
  }
}
