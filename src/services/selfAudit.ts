/**
 * Writes the service's own audit events (domain/selfAudit.ts) into the organization's log. A change is
 * recorded after it is made and its request answers once the record is stored: a change whose record
 * could not be written fails its request, which may be retried (every change here is idempotent to
 * repeat or refused the second time), so no change goes unrecorded without the caller being told.
 *
 * The admin CLI runs no event writer: it leaves its records in the outbox (db/auditOutbox.ts), which
 * every running instance drains every few seconds, writing each under the id the CLI chose.
 */
import type { TEventFilters } from '../domain/event';
import type { Logger } from 'pino';
import type { AuditOutbox } from '../db/auditOutbox';
import type { EventDoc } from '../db/documents';
import { isRetentionAction } from '../domain/retention';
import { type AuditActor, type AuditResource, type SelfAuditAction, SELF_AUDIT_KEY_ID } from '../domain/selfAudit';
import type { Clock } from '../domain/time';
import type { Ingest } from '../ingest/ingest';
import { draftsOf, freshStamp } from './idempotency';
import type { Principal } from './auth';

export class SelfAudit {
  private timer: NodeJS.Timeout | null = null;
  private draining: Promise<void> | null = null;

  constructor(
    private readonly ingest: Pick<Ingest, 'writeOwn'>,
    private readonly outbox: AuditOutbox,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** `given`: the event's id and time, for a record made elsewhere (the outbox's). */
  async record(tenant: string, actor: AuditActor, action: SelfAuditAction, resource: AuditResource, metadata: Record<string, unknown> = {}, given?: { id: string; at: Date }): Promise<EventDoc> {
    const now = this.clock.now();
    const who = describe(actor);
    const content = {
      ts: given?.at ?? null,
      actor_id: who.id,
      actor_name: who.name,
      actor_email: who.email,
      action,
      resource_type: resource.type,
      resource_id: resource.id,
      resource_name: resource.name ?? null,
      metadata: JSON.stringify({ actor_type: actor.type, ...(actor.type === 'member' ? { role: actor.role } : {}), ...(actor.type === 'api_key' && actor.scopes ? { scopes: [...actor.scopes] } : {}), ...metadata }),
      organization_id: tenant,
    };
    // A retention entry is an authority for removals, and verifiers take only the service's own as one
    // (domain/retention.ts): made with a key, it keeps `audit_ledger` and names the key as its actor.
    const keyId = actor.type === 'api_key' && !isRetentionAction(action) ? actor.keyId : SELF_AUDIT_KEY_ID;
    const stamp = given ? { ids: [given.id], receivedAt: now, apiKeyId: keyId } : freshStamp(1, now, keyId);
    const [doc] = await this.ingest.writeOwn(draftsOf(tenant, [content], stamp));
    return doc as EventDoc;
  }

  /** Writes what the admin CLI left in the outbox, oldest first; each is removed once stored. */
  async drainOutbox(): Promise<void> {
    this.draining ??= (async () => {
      try {
        for (const doc of await this.outbox.waiting()) {
          await this.record(doc.tenant, doc.actor, doc.action, doc.resource, doc.metadata, { id: doc._id, at: doc.at });
          await this.outbox.remove(doc._id);
        }
      } catch (err) {
        this.log.warn({ err }, 'could not write the self-audit outbox; retrying at the next round');
      } finally {
        this.draining = null;
      }
    })();
    return this.draining;
  }

  start(intervalMs: number): void {
    this.timer ??= setInterval(() => void this.drainOutbox(), intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.draining;
  }

  /** An export's record: what was exported, by whom. */
  exportRun(principal: Principal, format: string, filters: TEventFilters, treeSize: number): Promise<EventDoc> {
    return this.record(principal.tenant, actorOf(principal), 'audit_ledger.export.run', { type: 'export', id: `tree-${treeSize}` }, { format, filters, tree_size: treeSize });
  }
}

/** The actor of a request's principal. */
export function actorOf(principal: Principal): AuditActor {
  switch (principal.kind) {
    case 'apiKey': return { type: 'api_key', keyId: principal.keyId, scopes: principal.scopes };
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
    case 'service': return { id: `audit_ledger:${actor.job}`, name: `Audit Ledger ${actor.job}`, email: null };
  }
}
