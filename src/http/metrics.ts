/** Prometheus metrics (prom-client), one registry per app so tests can run several apps in one process. */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { ServiceStats } from '../services/container';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  exportStreams: Gauge;
  exportRows: Counter;
  exportFailures: Counter;
}

export function createMetrics(options: { defaultMetrics: boolean; stats: () => ServiceStats }): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  // Read from the services when scraped, so the hot path only bumps plain numbers.
  const gauge = (name: string, help: string, read: (stats: ServiceStats) => number) =>
    new Gauge({ name, help, registers: [registry], collect() { this.set(read(options.stats())); } });
  gauge('ingest_batches_total', 'Group-commit batches written', (s) => s.ingest.batches);
  gauge('ingest_events_total', 'Events stored by this process', (s) => s.ingest.events);
  gauge('ingest_events_forwarded_total', 'Events sent to the instance that writes their organization, and stored there', (s) => s.ingest.forwarded);
  gauge('instances_live', 'Service instances on this database that this one takes for live, itself included', (s) => s.ingest.liveInstances);
  gauge('ingest_sequence_conflicts_total', 'Batches that lost a sequence-number race to another writer and were retried', (s) => s.ingest.conflicts);
  gauge('ingest_events_duplicate_total', 'Events written again under an id already stored, answered with the stored event', (s) => s.ingest.duplicates);
  gauge('ingest_events_refused_total', 'Events the database refused to store (answered 422)', (s) => s.ingest.refused);
  gauge('idempotency_keys_claimed_total', 'Writes that used an Idempotency-Key for the first time', (s) => s.idempotency.claimed);
  gauge('idempotency_replays_total', 'Writes answered from events an earlier request with the same key stored (nothing written)', (s) => s.idempotency.replayed);
  gauge('idempotency_completions_total', 'Retries with a known key that wrote events still missing', (s) => s.idempotency.completed);
  gauge('idempotency_key_reused_total', 'Writes refused because their key was used for another request (422)', (s) => s.idempotency.reused);
  gauge('ledger_checkpoints_signed_total', 'Checkpoints this instance signed', (s) => s.ledger.checkpoints);
  gauge('ledger_rounds_total', 'Ledger rounds this instance ran with logs to integrate', (s) => s.ledger.rounds);
  gauge('ledger_round_organizations_seconds_total', 'Time those rounds spent on the organizations\' logs', (s) => s.ledger.organizationMs / 1000);
  gauge('ledger_round_installation_seconds_total', 'Time those rounds spent appending to and signing the installation log (witness submissions run after, apart)', (s) => s.ledger.installationMs / 1000);
  gauge('ledger_witness_cosignatures_total', 'Installation checkpoints a witness cosigned (submissions from this instance)', (s) => s.witnesses?.accepted ?? 0);
  gauge('ledger_witness_conflicts_total', 'Witness answers 409 (the witness held another size: resent from it)', (s) => s.witnesses?.conflicts ?? 0);
  gauge('ledger_witness_refusals_total', 'Witness answers that cosigned nothing and are not alarms (404 unknown log, 403 untrusted key, 400, others)', (s) => s.witnesses?.refused ?? 0);
  gauge('ledger_witness_unreachable_total', 'Submissions to a witness that got no answer', (s) => s.witnesses?.unreachable ?? 0);
  gauge('ledger_witness_alarms_total', 'Witness alarms: a witness holds a history the installation log does not extend (see ledger audit)', (s) => s.witnesses?.alarms ?? 0);
  gauge('ledger_integration_failures_total', 'Ledger integration rounds that failed (retried at the next interval)', (s) => s.ledger.failures);
  gauge('ledger_conflicts_total', 'Times an organization\'s log halted because its stored ledger state disagreed with what was signed, or was missing (run ledger audit)', (s) => s.ledger.conflicts);
  gauge('ledger_halted_organizations', 'Organizations whose log this instance will not sign until an operator runs ledger reseal', (s) => s.ledger.halted);
  gauge('streams_running', 'Log streams this instance delivers now', (s) => s.streams.running);
  gauge('stream_batches_delivered_total', 'Stream batches a destination acknowledged (from this instance)', (s) => s.streams.batches);
  gauge('stream_events_delivered_total', 'Events in those batches', (s) => s.streams.events);
  gauge('stream_delivery_failures_total', 'Stream sends that failed (retried with backoff)', (s) => s.streams.failures);
  gauge('streams_failing', 'Streams of this instance whose destination has failed past the limit', (s) => s.streams.failing);
  new Gauge({
    name: 'ledger_foreign_rows_total',
    help: 'Rows met without a valid MAC (written into the database behind the service\'s back): never signed, delivered or taken as authority',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      const counts = options.stats().foreign;
      for (const kind of ['event', 'tombstone', 'entry', 'outbox'] as const) this.set({ kind }, counts[kind]);
    },
  });
  gauge('ledger_foreign_rows_moved_aside_total', 'Foreign event rows moved out of a sequence number the service needed, into foreign_rows', (s) => s.foreign.movedAside);
  gauge('self_audit_outbox_foreign_total', 'Self-audit outbox records that were not the admin CLI\'s (no valid MAC, or not a kind it makes): never written, moved aside into foreign_rows', (s) => s.selfAudit.outboxForeign);
  gauge('ledger_audit_runs_total', 'Background audits completed', (s) => s.audit.runs);
  gauge('ledger_audit_findings_total', 'Events or ledger records found changed by the background audit', (s) => s.audit.findings);
  return {
    registry,
    httpRequests: new Counter({ name: 'http_requests_total', help: 'HTTP requests', labelNames: ['method', 'route', 'status'], registers: [registry] }),
    exportStreams: new Gauge({ name: 'export_streams_open', help: 'Export database cursors currently open', registers: [registry] }),
    exportRows: new Counter({ name: 'export_rows_total', help: 'Events read from the database by exports', registers: [registry] }),
    exportFailures: new Counter({ name: 'export_failures_total', help: 'Exports cut short after their first byte (database failure or time limit)', registers: [registry] }),
  };
}
