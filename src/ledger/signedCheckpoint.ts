/** The checkpoints this installation's key signs, and the check that a stored one is one of them. */
import { checkpointProblem } from '../domain/ledger/checkpoint';
import { checkpointText } from '../domain/ledger/formats';
import { logOrigin, LedgerHalt } from '../domain/ledger/log';
import { signNote, type Signer } from '../domain/ledger/note';
import type { LedgerCheckpointDoc } from '../db/documents';
import { checkpointId } from '../db/ledgerStore';

/** The signed checkpoint document of `tenant`'s tree of `size` leaves with `root`, in the installation whose ledger is `name`. */
export function signCheckpoint(name: string, tenant: string, size: number, root: Buffer, signer: Signer, now: Date): LedgerCheckpointDoc {
  const note = signNote(checkpointText({ origin: logOrigin(name, tenant), size, root }), signer);
  return { _id: checkpointId(tenant, size), tenant, size, root: root.toString('base64'), note, created_at: now };
}

/**
 * Throws LedgerHalt unless `doc` is a checkpoint of `tenant`'s log that this installation's key signed,
 * stored under its own id. Without a signer (nothing is signed) every checkpoint passes.
 */
export function verifyCheckpoint(name: string, signer: Signer | null, tenant: string, doc: LedgerCheckpointDoc): void {
  if (!signer) return;
  if (doc._id === checkpointId(tenant, doc.size) && checkpointProblem(doc, logOrigin(name, tenant), signer) === null) return;
  throw new LedgerHalt(`the stored checkpoint of size ${doc.size} is not one this installation's key signed for this log`);
}
