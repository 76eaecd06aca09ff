/**
 * Whether the signing key fits the ledger the database holds. A start that would sign with another key
 * than the one that signed the stored checkpoints (the key file lost, or the data directory moved away
 * while the database stayed where it was) would halt every organization's log and go on answering 201:
 * it is refused instead, with the way out (restore the key file, or `ledger new-installation`).
 *
 * The check reads a few checkpoints, never a scan: the installation log's newest (its head, then the
 * checkpoint by id: two point reads) and any one checkpoint (a read with no filter and no sort, which
 * FerretDB limits in PostgreSQL: db/installationStore.ts). The key fits when one of them is signed by it, or when none is stored.
 * A checkpoint tampered with is not this check's business: the integrator halts its log (integrate.ts, at its load).
 */
import { resolve } from 'node:path';
import type { LedgerCheckpointDoc } from '../db/documents';
import type { InstallationStore } from '../db/installationStore';
import { fromBase64, hex8 } from '../domain/ledger/formats';
import { openNote, type Verifier } from '../domain/ledger/note';
import { INSTALLATION } from '../domain/ledger/log';
import { SigningKeyError } from './signingKey';

/** The start was refused: the stored ledger was signed by another key than the key file's (or there is no key file). */
export class SigningKeyMismatch extends SigningKeyError {}

/** Whether `verifier` signed this checkpoint's note. */
export function signedBy(doc: LedgerCheckpointDoc, verifier: Verifier): boolean {
  try {
    openNote(doc.note, verifier);
    return true;
  } catch {
    return false;
  }
}

/** The keys whose signatures a note carries, as `<name> (key id <hex>)`. */
export function noteSigners(note: string): string[] {
  const split = note.lastIndexOf('\n\n');
  if (split < 0) return [];
  const signers: string[] = [];
  for (const line of note.slice(split + 2).split('\n')) {
    const match = /^\u2014 (\S+) (\S+)$/.exec(line);
    const raw = match ? fromBase64(match[2] as string) : null;
    if (match && raw && raw.length >= 4) signers.push(`${match[1] as string} (key id ${hex8(new DataView(raw.buffer, raw.byteOffset).getUint32(0))})`);
  }
  return signers;
}

/** Whether a note's signature lines name `verifier`: its name with its key id, or with none readable. */
function namesKey(note: string, verifier: Verifier): boolean {
  const split = note.lastIndexOf('\n\n');
  if (split < 0) return false;
  return note.slice(split + 2).split('\n').some((line) => {
    const match = /^\u2014 (\S+) (\S+)$/.exec(line);
    if (match?.[1] !== verifier.name) return false;
    const raw = fromBase64(match[2] as string);
    return !raw || raw.length < 4 || new DataView(raw.buffer, raw.byteOffset).getUint32(0) === verifier.id;
  });
}

/**
 * Null when `verifier` fits the stored ledger (one of the sampled checkpoints is signed by it, or none
 * is stored); otherwise the checkpoints sampled and who signed them. `verifier` null: no key file yet,
 * which fits only a database with no checkpoint.
 */
export async function ledgerKeyMismatch(store: Pick<InstallationStore, 'sampleCheckpoints'>, verifier: Verifier | null): Promise<{ sampled: LedgerCheckpointDoc[]; signers: string[] } | null> {
  const sampled = await store.sampleCheckpoints(INSTALLATION);
  if (sampled.length === 0) return null;
  if (verifier && sampled.some((doc) => signedBy(doc, verifier))) return null;
  const signers = [...new Set(sampled.flatMap((doc) => noteSigners(doc.note)))];
  // A checkpoint that names this very key (or this key's name with a signature too damaged to read its
  // key id) but whose signature fails was changed in the database, not signed by another key: the
  // integrator halts its log and `ledger audit` names it; the start goes on (refusing it would send the
  // operator to `ledger new-installation` for a tampered document). Another key always signs readably.
  if (verifier && sampled.some((doc) => namesKey(doc.note, verifier))) return null;
  return { sampled, signers };
}

/**
 * Throws SigningKeyMismatch, one paragraph naming the key file, the data directory and the way out,
 * unless the key fits the stored ledger. `signer` null: the key file does not exist (a new key would be made).
 */
export async function assertKeyFitsLedger(
  store: Pick<InstallationStore, 'sampleCheckpoints' | 'describe'>,
  signer: Verifier | null,
  where: { keyFile: string; dataDir: string; mongodbUri: string | undefined },
): Promise<void> {
  const mismatch = await ledgerKeyMismatch(store, signer);
  if (!mismatch) return;
  const keyFile = resolve(where.keyFile);
  const dataDir = resolve(where.dataDir);
  const signers = mismatch.signers.length ? mismatch.signers.join(', ') : 'a key that cannot be named (malformed signatures)';
  const keyState = signer
    ? `the signing key file ${keyFile} holds another key, ${signer.name} (key id ${hex8(signer.id)})`
    : `there is no signing key file at ${keyFile}`;
  throw new SigningKeyMismatch(
    `Audit Ledger did not start: the database ${await store.describe(where.mongodbUri, where.dataDir)} holds ledger checkpoints signed by ${signers}, but ${keyState}; ` +
      `starting with ${signer ? 'that key' : 'a new key'} would halt every organization's ledger. The data directory is ${dataDir} (DATA_DIR). ` +
      `If you still have the original key file (a backup, or the data directory you moved away), put it back at ${keyFile} (or point LEDGER_SIGNING_KEY_FILE at it) and start again. ` +
      `To begin a new installation on this database on purpose, keeping its organizations and events but signing every organization's log anew under ${signer ? 'the key in that file' : 'a new key'} (every customer's monitor will see it), ` +
      'stop every instance and run `npx audit-ledger ledger new-installation --confirm` (logged, and recorded in the database). ' +
      'To start with an empty database instead, see "Data and reset" in the README.',
  );
}
