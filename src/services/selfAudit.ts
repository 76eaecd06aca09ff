/**
 * Writes the service's own audit events (domain/selfAudit.ts) into the organization's log. A change is
 * recorded after it is made and its request answers once the record is stored: a change whose record
 * could not be written fails its request, which may be retried (every change here is idempotent to
 * repeat or refused the second time), so no change goes unrecorded without the caller being told.
 *
 * The admin CLI runs no event writer: it leaves its records in the outbox (db/auditOutbox.ts), which
 * every running instance drains every few seconds, writing each under the id the CLI chose. The outbox
 * is as writable as the rest of the database, so the drain writes only records sealed with the row key
 * (db/rowMacs.ts) and of the kinds the CLI makes; any other record is foreign: named, counted and moved
 * aside, never written (a planted retention entry would otherwise be the service's own authority to
 * remove events).
 */
import type { TEventFilters } from '../domain/event';
import type { Logger } from 'pino';
import { type AuditOutbox, isOperatorRecord } from '../db/auditOutbox';
import type { AuditOutboxDoc, EventDoc } from '../db/documents';
import { describeDbError } from '../db/errors';
import { isOwnOutbox } from '../db/rowMacs';
import type { RowMac } from '../domain/ledger/rowMac';
import { isRetentionAction } from '../domain/retention';
import { type AuditActor, type AuditResource, PRODUCER_BOUND_ACTION, type SelfAuditAction, SELF_AUDIT_KEY_ID } from '../domain/selfAudit';
import type { Clock } from '../domain/time';
import type { Ingest } from '../ingest/ingest';
import { draftsOf, freshStamp } from './idempotency';
import type { Principal } from './auth';

export class SelfAudit {
  private draining: Promise<void> | null = null;
  private saidUnkeyed = false;
  /** Outbox records this process found foreign (no valid MAC, or not of a kind the CLI makes) and moved aside. */
  readonly stats = { outboxForeign: 0 };

  constructor(
    private readonly ingest: Pick<Ingest, 'writeOwn'>,
    private readonly outbox: AuditOutbox,
    /** The row key (from the signing key file) the CLI seals its records with; null: the drain writes nothing. */
    private readonly rowMac: RowMac | null,
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
    // A retention entry is an authority for removals, a binding one for whose events must be signed, and
    // verifiers take only the service's own as either (domain/retention.ts, domain/producerSignature.ts):
    // made with a key, it keeps `audit_ledger` and names the key as its actor.
    const keyId = actor.type === 'api_key' && !isRetentionAction(action) && action !== PRODUCER_BOUND_ACTION ? actor.keyId : SELF_AUDIT_KEY_ID;
    const stamp = given ? { ids: [given.id], receivedAt: now, apiKeyId: keyId } : freshStamp(1, now, keyId);
    const [doc] = await this.ingest.writeOwn(draftsOf(tenant, [content], stamp));
    return doc as EventDoc;
  }

  /**
   * Writes what the admin CLI left in the outbox, oldest first; each is removed once stored. A record
   * that is not the CLI's (`isCliRecord`) is moved aside instead. Without the row key nothing is written
   * or moved: an instance that has the key file drains them.
   */
  async drainOutbox(): Promise<void> {
    const mac = this.rowMac;
    if (!mac) {
      if (!this.saidUnkeyed) this.log.warn('the self-audit outbox is not drained by this process: it has no signing key to check the admin CLI\'s records with');
      this.saidUnkeyed = true;
      return;
    }
    this.draining ??= (async () => {
      try {
        for (const doc of await this.outbox.waiting()) {
          if (!isCliRecord(mac, doc)) {
            await this.foreign(doc);
            continue;
          }
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

  /** A record the CLI did not make: named at error level, counted, moved into `foreign_rows`. */
  private async foreign(doc: AuditOutboxDoc): Promise<void> {
    this.log.error({ kind: 'outbox', id: doc._id, action: doc.action, tenant: doc.tenant, where: 'self-audit outbox' }, 'FOREIGN outbox record: no valid MAC or not a kind the admin CLI makes (written into the database behind the service\'s back); not written to the log, moved aside into foreign_rows');
    this.stats.outboxForeign++;
    try {
      await this.outbox.moveAside(doc, 'self-audit outbox', this.clock.now());
    } catch (err) {
      // Still never written: the next round meets it again, names and counts it again, and retries.
      this.log.error({ id: doc._id, error: describeDbError(err) }, 'could not move a foreign outbox record aside');
    }
  }

  /** An export's record: what was exported, by whom. */
  exportRun(principal: Principal, format: string, filters: TEventFilters, treeSize: number): Promise<EventDoc> {
    return this.record(principal.tenant, actorOf(principal), 'audit_ledger.export.run', { type: 'export', id: `tree-${treeSize}` }, { format, filters, tree_size: treeSize });
  }
}

/** Whether an outbox record is the admin CLI's: sealed with the row key as it stands, and of a kind the CLI makes. */
function isCliRecord(mac: RowMac, doc: AuditOutboxDoc): boolean {
  try {
    return isOwnOutbox(mac, doc) && isOperatorRecord(doc);
  } catch {
    // Fields that cannot even be encoded (a planted shape) were not sealed by the CLI.
    return false;
  }
}

/** The actor of a request's principal. */
export function actorOf(principal: Principal): AuditActor {
  switch (principal.kind) {
    case 'apiKey': return { type: 'api_key', keyId: principal.keyId, scopes: principal.scopes };
    case 'session': return { type: 'member', accountId: principal.accountId, email: principal.email, role: principal.role };
    case 'viewer': return { type: 'viewer_token', eventOrganizationId: principal.eventOrganizationId };
  }
}

function describe(actor: AuditActor): { id: string; name: string | null; email: string | null } {
  switch (actor.type) {
    case 'member': return { id: actor.accountId, name: actor.email, email: actor.email };
    case 'api_key': return { id: actor.keyId, name: null, email: null };
    case 'operator': return { id: 'operator', name: 'admin CLI', email: null };
    case 'viewer_token': return { id: `viewer:${actor.eventOrganizationId}`, name: null, email: null };
    case 'anonymous': return { id: 'anonymous', name: null, email: actor.email };
    case 'service': return { id: `audit_ledger:${actor.job}`, name: `Audit Ledger ${actor.job}`, email: null };
  }
}
