/**
 * What the admin commands open: the database and the repositories they use, nothing that runs (no
 * writer, no ledger rounds, no instance heartbeat). The database is MONGODB_URI, or the embedded one
 * under DATA_DIR (as for `npm start`).
 */
import { ProducerClaimStore } from '../db/producerClaimStore';
import { readFileSync } from 'node:fs';
import { loadConfig } from '../config/env';
import { ApiKeyRepository } from '../db/apiKeyRepository';
import { AuditOutbox } from '../db/auditOutbox';
import { connectDatabase } from '../db/connect';
import { collections, ensureIndexes } from '../db/database';
import { InstallationStore } from '../db/installationStore';
import { LedgerStore } from '../db/ledgerStore';
import { OrgRepository } from '../db/orgRepository';
import { WitnessStore } from '../db/witnessStore';
import { parsePrivateKey, type Signer } from '../domain/ledger/note';
import { createLogger } from '../logger';

export interface AdminDatabase {
  orgs: OrgRepository;
  apiKeys: ApiKeyRepository;
  /** Which keys' events are signed by a producer (services/producerKeys.ts). */
  producerClaims: ProducerClaimStore;
  ledger: LedgerStore;
  witnesses: WitnessStore;
  /** Self-audit records of the operator's changes, for a running instance to write (db/auditOutbox.ts). */
  outbox: AuditOutbox;
  /** The whole installation's ledger: the key check's reads and `ledger new-installation`'s drop and reseal. */
  installation: InstallationStore;
}

/** Runs `use` with the database open; `indexes`: make sure the indexes exist first (commands that write). */
export async function withAdminDatabase<T>(use: (db: AdminDatabase) => Promise<T>, options: { indexes?: boolean } = {}): Promise<T> {
  const config = loadConfig();
  const database = await connectDatabase(config, createLogger(config.cliLogLevel, process.stderr));
  try {
    const c = collections(database.db);
    if (options.indexes) await ensureIndexes(c);
    return await use({ orgs: new OrgRepository(c, config.planCaps), apiKeys: new ApiKeyRepository(c), producerClaims: new ProducerClaimStore(c), ledger: new LedgerStore(c), witnesses: new WitnessStore(c), outbox: new AuditOutbox(c), installation: new InstallationStore(database.db) });
  } finally {
    await database.close();
  }
}

/** The installation's signing key, from its key file, or null when this machine cannot read it. */
export function installationKey(): Signer | null {
  try {
    return parsePrivateKey(readFileSync(loadConfig().ledgerKeyFile, 'utf8'));
  } catch {
    return null;
  }
}
