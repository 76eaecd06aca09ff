/**
 * The witnesses' part of a verification (c2sp.org/tlog-policy): an installation checkpoint's
 * cosignatures (cosignature/v1) by a policy's witnesses meet its quorum, and an organization checkpoint
 * is an entry of that installation checkpoint, signed by the same key.
 */
import { cosignersOf } from '../domain/ledger/cosigner';
import { type Checkpoint, parseCheckpoint } from '../domain/ledger/formats';
import { leafHash, verifyInclusion } from '../domain/ledger/merkle';
import { openNote, type Verifier } from '../domain/ledger/note';
import type { TInstallationInclusion } from '../domain/ledger/schemas';
import { checkpointBody, type Policy, quorumMet } from '../domain/ledger/witnessFormats';
import type { RecordVerdict } from './verdicts';

/** Records whether the cosignatures on an installation checkpoint's `note` meet the policy's quorum; returns the witnesses that cosigned. */
export function checkQuorum(note: string, policy: Policy, record: RecordVerdict): string[] {
  const cosigned = cosignersOf(note, policy);
  const met = quorumMet(policy, new Set(cosigned));
  record(met, `cosigned by ${cosigned.join(', ') || 'no witness of the policy'}: the policy's quorum (${policy.quorum}) is ${met ? 'met' : 'NOT met'}`);
  return cosigned;
}

/**
 * Records whether the organization checkpoint `orgCheckpoint` is an entry of an installation checkpoint
 * signed by the same key, whose cosignatures by the policy's witnesses meet its quorum. Returns the
 * witnesses whose cosignatures verified.
 */
export function checkWitnessed(policy: Policy, verifier: Verifier, orgCheckpoint: string, installation: TInstallationInclusion | null, record: RecordVerdict): string[] {
  if (!installation) {
    record(false, 'no installation checkpoint includes the checkpoint in the proofs: it is not witnessed (export again in a few seconds)');
    return [];
  }
  let tree: Checkpoint;
  try {
    tree = parseCheckpoint(openNote(installation.checkpoint, verifier));
  } catch (error) {
    record(false, `installation checkpoint: not signed by ${verifier.name}: ${error instanceof Error ? error.message : String(error)}`);
    return [];
  }
  record(tree.origin === `${verifier.name}/installation` && tree.size === installation.tree_size, `installation checkpoint ${tree.origin} of ${tree.size} entries signed by ${verifier.name}`);
  const cosigned = checkQuorum(installation.checkpoint, policy, record);
  record(
    installation.entry === checkpointBody(orgCheckpoint) &&
      verifyInclusion(installation.entry_index, tree.size, leafHash(installation.entry), installation.inclusion_path.map((h) => Buffer.from(h, 'base64')), tree.root),
    `the organization checkpoint is entry ${installation.entry_index} of the witnessed installation tree`,
  );
  return cosigned;
}
