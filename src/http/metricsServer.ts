/**
 * /metrics on an address of its own (`METRICS_HOST`:`METRICS_PORT`, loopback by default), never on the
 * public port: the figures describe every tenant's traffic, and scraping them costs the server work.
 * METRICS_PORT defaults to 0 (a free port, logged at start) so that instances on one host differ only
 * by PORT; a Prometheus deployment sets a fixed METRICS_PORT per instance for its scrape targets.
 */
import { createServer, type Server } from 'node:http';
import type { Metrics } from './metrics';

export function createMetricsServer(metrics: Metrics): Server {
  return createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('Metrics could not be collected\n'),
    );
  });
}
