/** Checking a stored checkpoint against its signature: what the integrator builds on and what the audit reports. */
import { parseCheckpoint, toBase64 } from './formats';
import { openNote, type Verifier } from './note';

/** A checkpoint as stored: its size and root beside the signed note that should say the same. */
export interface StoredCheckpoint {
  size: number;
  /** Base64 of the root. */
  root: string;
  note: string;
}

/**
 * Why `stored` is not a checkpoint of `origin`'s log that `verifier` signed with the size and root it
 * records, or null when it is.
 */
export function checkpointProblem(stored: StoredCheckpoint, origin: string, verifier: Verifier): string | null {
  let signed;
  try {
    signed = parseCheckpoint(openNote(stored.note, verifier));
  } catch {
    return 'its note is not signed by this installation\'s key';
  }
  if (signed.origin !== origin) return `it was signed for the log ${signed.origin}`;
  if (signed.size !== stored.size || toBase64(signed.root) !== stored.root) return 'its stored size or root differs from what was signed';
  return null;
}
