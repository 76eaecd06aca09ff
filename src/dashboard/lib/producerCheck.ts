/**
 * The event detail's producer-signature check (domain/producerSignature.ts): the binding entry of the
 * event's key is proven in the signed log exactly as the event is (`checkEvent`), then the event's
 * signature is checked with the producer key that entry names (`verifyProducerSignature`).
 *
 * The binding entry comes from the server's answer for one key: a database writer could leave it out,
 * and the key would then look unbound here. So the page says "bound per the log's entry", and only
 * `verify` over a whole export, which reads every entry of the log, is the complete check.
 */
import type { TEvent } from '../../domain/event';
import type { TInclusionProof } from '../../domain/ledger/schemas';
import { verifyProducerSignature } from '../../client/webVerify';
import { checkEvent, type FetchConsistency, type KeyValueStore } from './ledgerTrust';

export type ProducerVerdict =
  /** No binding entry of the key was found and the event carries no signature: nothing to say. */
  | { kind: 'unbound' }
  /** Signed by the producer key the log's binding entry names, that entry proven in a trusted checkpoint. */
  | { kind: 'signed'; producerKey: string; bindingId: string; bindingSeq: number; bindingTreeSize: number }
  | { kind: 'failed'; failures: string[] };

/** The log's binding entry of an event's key, with its inclusion proof. */
export interface ProvenBinding {
  entry: TEvent;
  proof: TInclusionProof;
}

/** Checks `event`'s producer signature against `binding` (null: the server found none for its key). */
export async function checkProducerSignature(
  store: KeyValueStore, org: string, servedKey: string, event: TEvent, binding: ProvenBinding | null, fetchConsistency: FetchConsistency,
): Promise<ProducerVerdict> {
  const failures: string[] = [];
  if (binding) {
    const proven = await checkEvent(store, org, servedKey, binding.entry, binding.proof, fetchConsistency);
    for (const failure of proven.failures) failures.push(`the binding entry ${binding.entry.id}: ${failure}`);
    if (proven.trust.kind === 'rewritten') failures.push(`the checkpoint that includes the binding entry ${binding.entry.id} is not trusted here: ${proven.trust.reason}`);
  }
  const signature = await verifyProducerSignature(event, binding?.entry ?? null);
  failures.push(...signature.failures);
  if (failures.length > 0) return { kind: 'failed', failures };
  if (!binding || !signature.signed || signature.producerKey === null) return { kind: 'unbound' };
  return { kind: 'signed', producerKey: signature.producerKey, bindingId: binding.entry.id, bindingSeq: binding.proof.leaf_index + 1, bindingTreeSize: binding.proof.tree_size };
}
