/**
 * The background audit (LEDGER_AUDIT_INTERVAL_MS): `ledger audit` on every organization, one after
 * another, and on the installation log and its witnesses' alarms, on a schedule. Findings are logged (kind, leaf, event id: never event contents) and counted,
 * so an alert on `ledger_audit_findings_total` tells that someone changed the database.
 */
import type { Logger } from 'pino';
import type { LedgerStore } from '../db/ledgerStore';
import type { OrgRepository } from '../db/orgRepository';
import type { Verifier } from '../domain/ledger/note';
import type { WitnessStore } from '../db/witnessStore';
import { auditInstallation, auditLog } from './audit';

export class AuditSchedule {
  readonly stats = { runs: 0, findings: 0 };

  constructor(
    private readonly orgs: OrgRepository,
    private readonly store: LedgerStore,
    private readonly witnesses: WitnessStore,
    private readonly verifier: Verifier | null,
    private readonly log: Logger,
  ) {}

  async runOnce(): Promise<void> {
    for (const tenant of await this.orgs.ids()) {
      try {
        const report = await auditLog(this.store.forTenant(tenant), this.verifier);
        this.stats.findings += report.findings.length;
        for (const finding of report.findings) this.log.error({ tenant, finding }, 'ledger audit: the stored events differ from what was signed');
      } catch (error) {
        this.log.error({ tenant, error: String(error) }, 'ledger audit could not run');
      }
    }
    try {
      const findings = await auditInstallation(this.store, this.witnesses, this.verifier);
      this.stats.findings += findings.length;
      for (const finding of findings) this.log.error({ tenant: 'installation', finding }, 'ledger audit: the installation log or its witnesses report a problem');
    } catch (error) {
      this.log.error({ tenant: 'installation', error: String(error) }, 'ledger audit could not run');
    }
    this.stats.runs++;
  }
}
