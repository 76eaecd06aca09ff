/**
 * The installation's one ledger signing key. Kept in a file, never in the database: someone who can
 * write the database must not be able to sign a rewritten history. Generated at first start (mode 0600)
 * when no file is there and the database holds no ledger signed by another key (ledger/keyFit.ts);
 * several instances share it by sharing the file.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parsePrivateKey, privateKeyText, type Signer } from '../domain/ledger/note';

export class SigningKeyError extends Error {
  override readonly name = 'SigningKeyError';
}

/**
 * Reads the key at `path`, or creates it there (exclusively: of two instances starting at once, one
 * writes it). The key's name is fixed when it is made, and recorded in the file: `configured`
 * (LEDGER_NAME) names a new key, or must agree with an existing one; unset, an existing key keeps its
 * name and a new one takes `fallback`. So a restart on another port keeps the ledger it had.
 */
export function loadOrCreateSigningKey(path: string, configured: string | undefined, fallback: string): { signer: Signer; created: boolean } {
  let created = false;
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${privateKeyText(configured ?? fallback, randomBytes(32))}\n`, { mode: 0o600, flag: 'wx' });
    created = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new SigningKeyError(`cannot create the ledger signing key ${path}: ${String(error)}`);
  }
  return { signer: readKeyFile(path, configured), created };
}

/**
 * The key at `path`, or null when no file is there: a start reads an existing key before it opens the
 * database, but makes a new one only once the database holds no ledger signed by another key
 * (ledger/keyFit.ts).
 */
export function readSigningKey(path: string, configured: string | undefined): Signer | null {
  return existsSync(path) ? readKeyFile(path, configured) : null;
}

/** A new key's name: the host and port people reach the service at, `<host:port>/ledger`. */
export function defaultLedgerName(publicUrl: string | undefined, port: number): string {
  return `${new URL(publicUrl ?? `http://localhost:${port}`).host}/ledger`;
}

function readKeyFile(path: string, configured: string | undefined): Signer {
  let signer: Signer;
  try {
    signer = parsePrivateKey(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new SigningKeyError(`the ledger signing key ${path} cannot be used: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (configured !== undefined && signer.name !== configured) {
    throw new SigningKeyError(`the ledger signing key ${path} is for ${signer.name}, but LEDGER_NAME is ${configured}: set LEDGER_NAME=${signer.name}, or use another key file`);
  }
  return signer;
}
