/** Prometheus metrics (prom-client), one registry per app so tests can run several apps in one process. */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  exportStreams: Gauge;
  exportRows: Counter;
}

export function createMetrics(options: { defaultMetrics: boolean }): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpRequests: new Counter({ name: 'http_requests_total', help: 'HTTP requests', labelNames: ['method', 'route', 'status'], registers: [registry] }),
    exportStreams: new Gauge({ name: 'export_streams_open', help: 'Export database cursors currently open', registers: [registry] }),
    exportRows: new Counter({ name: 'export_rows_total', help: 'Events read from the database by exports', registers: [registry] }),
  };
}
