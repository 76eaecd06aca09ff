/** `npm start`: configuration, database, services, HTTP server; stops cleanly on SIGINT and SIGTERM. */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from './config/env';
import { connectDatabase, DatabaseStartError } from './db/connect';
import { systemClock } from './domain/time';
import { createHttpApp, SERVER_TIMEOUTS } from './http/app';
import { createInternalListener } from './http/internalApp';
import { createMetricsServer } from './http/metricsServer';
import { createLogger } from './logger';
import { createServices } from './services/container';
import { job } from './services/jobs';
import { defaultLedgerName, loadOrCreateSigningKey, readSigningKey, SigningKeyError } from './ledger/signingKey';
import { assertKeyFitsLedger } from './ledger/keyFit';
import { InstallationStore } from './db/installationStore';
import { readWitnessPolicy } from './ledger/witnesses';
import { UnsealedRowsError } from './ledger/legacyRows';

/** A listener's port could not be had: the message names the variable that sets it. */
class PortError extends Error {
  override readonly name = 'PortError';
}

/** Listens on `port` at `host`; a port in use (or not allowed) fails with one line naming `variable`. */
async function listenOn(server: Server, port: number, host: string, variable: string): Promise<number> {
  server.listen(port, host);
  try {
    await once(server, 'listening');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const where = `${hostForUrl(host)}:${port}`;
    if (code === 'EADDRINUSE') throw new PortError(`Port ${port} is already in use (${where}, ${variable}): another instance or program listens there; set ${variable} to a free port (0 picks one).`);
    if (code === 'EACCES') throw new PortError(`Port ${port} may not be used by this user (${where}, ${variable}): set ${variable} to a port above 1023 (0 picks one).`);
    if (code === 'EADDRNOTAVAIL') throw new PortError(`The address ${host} is not one of this machine's (${where}, ${variable}).`);
    throw error;
  }
  return (server.address() as AddressInfo).port;
}

/** A host as it appears in a URL: IPv6 addresses in brackets. */
function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const keyFile = config.ledgerKeyFile;
  // An existing key is read (an unusable one refused) before the database starts; a missing one is made
  // only once the database shows no ledger signed by another key: a start with the wrong key is refused
  // (ledger/keyFit.ts) before anything runs or answers.
  const existing = readSigningKey(keyFile, config.ledgerName);
  const database = await connectDatabase(config, log);
  try {
    await assertKeyFitsLedger(new InstallationStore(database.db), existing, { keyFile, dataDir: config.dataDir, mongodbUri: config.mongodbUri });
  } catch (error) {
    await database.close().catch(() => undefined);
    throw error;
  }
  // A new key's name: the host and port people reach the service at. An existing key keeps its own.
  const { signer, created } = existing ? { signer: existing, created: false } : loadOrCreateSigningKey(keyFile, config.ledgerName, defaultLedgerName(config.publicUrl, config.port));
  const ledgerName = signer.name;
  const witnessPolicy = config.witnessPolicyFile ? readWitnessPolicy(config.witnessPolicyFile) : null;
  const { http, jobs, parts } = await createServices(database.db, { ...config, ledger: { name: ledgerName, signer, intervalMs: config.ledgerIntervalMs, witnessPolicy } }, systemClock, log);
  log.info({ keyFile, created, verifierKey: signer.text }, `Ledger verifier key (pin it to verify checkpoints offline): ${signer.text}`);
  const { listener, metrics } = createHttpApp(http, {
    defaultMetrics: true,
    publicUrl: config.publicUrl,
    trustProxy: config.trustProxy,
    trustProxyHops: config.trustProxyHops,
    installationToken: config.installationToken,
    viewerFrameAncestors: config.viewer.frameAncestors,
  });

  const server = createServer(SERVER_TIMEOUTS, listener);
  const metricsServer = createMetricsServer(metrics);
  // Other instances on this database forward events to the internal listener; alone, nothing is ever sent to it.
  const internal = createServer(createInternalListener(http.ingest));
  const ports = { port: 0, metricsPort: 0, internalPort: 0 };
  const listeners = job(
    'listeners',
    async () => {
      try {
        ports.port = await listenOn(server, config.port, config.host, 'PORT');
        ports.metricsPort = await listenOn(metricsServer, config.metricsPort, config.metricsHost, 'METRICS_PORT');
        ports.internalPort = await listenOn(internal, config.internalPort, config.internalHost, 'INTERNAL_PORT');
      } catch (error) {
        for (const opened of [server, metricsServer, internal]) if (opened.listening) opened.close();
        throw error;
      }
    },
    () => {
      for (const opened of [server, metricsServer, internal]) {
        opened.close();
        opened.closeIdleConnections();
      }
    },
  );
  const wildcard = ['0.0.0.0', '::', ''].includes(config.internalHost);
  // Left before the ports close (it stops after them): the other instances then write this one's organizations themselves.
  const membership = job(
    'instance-list',
    () => http.ingest.instances.join(config.instanceUrl ?? `http://${wildcard ? '127.0.0.1' : hostForUrl(config.internalHost)}:${ports.internalPort}`),
    () => http.ingest.instances.leave(),
  );
  const lifecycle = jobs(
    {
      // Self-audit records the admin CLI left (it runs no event writer).
      selfAuditIntervalMs: 2000,
      ledgerAuditIntervalMs: config.ledgerAuditIntervalMs,
      pruneIntervalMs: config.retention.pruneIntervalMs,
      deliverStreams: true,
    },
    [listeners, membership],
  );
  try {
    await lifecycle.start();
  } catch (error) {
    await database.close().catch(() => undefined);
    throw error;
  }
  const url = config.publicUrl ?? `http://localhost:${ports.port}`;
  log.info(
    { port: ports.port, url, metricsPort: ports.metricsPort, internalPort: ports.internalPort, database: database.kind },
    `Audit Ledger listening on ${url}: open it for the dashboard (API reference: ${url}/docs; metrics: http://${config.metricsHost}:${ports.metricsPort}/metrics)`,
  );
  // Process managers and scripts wait for this line: it goes out now, not with the next lines (logger.ts).
  log.flush();

  if ((await parts.stores.orgs.list()).length === 0) {
    process.stderr.write(
      [
        '',
        `No organization exists yet. Open ${url} to sign up and create an API key, or use the CLI:`,
        '  npx audit-ledger org create --name "My Company"',
        '  npx audit-ledger key create --org <org id printed above> --name "backend"',
        'Then record an event:',
        `  curl -X POST ${url}/v1/events -H "Authorization: Bearer <key>" -H "Content-Type: application/json" \\`,
        `    -d '{"actor":{"id":"user_1"},"action":"invoice.created","resource":{"type":"invoice","id":"inv_1"}}'`,
        '',
      ].join('\n'),
    );
  }

  const shutdown = async (signal: string) => {
    log.info({ signal }, 'shutting down');
    await lifecycle.stop();
    await database.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DatabaseStartError || error instanceof SigningKeyError || error instanceof UnsealedRowsError || error instanceof PortError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`Audit Ledger failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
