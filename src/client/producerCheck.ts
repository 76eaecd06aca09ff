/**
 * Producer signatures checked over exported events (domain/producerSignature.ts), for `verify`: the
 * bindings come from the log's own binding entries among them. Says nothing when the events hold
 * neither a binding nor a signature (no key of the organization is bound).
 */
import type { TEvent } from '../domain/event';
import { ProducerSignatureCheck } from '../domain/producerSignature';
import type { RecordVerdict } from './verdicts';

/**
 * `events`: events proven in the signed tree; `complete`: they are the whole log; `pinned`: bindings
 * the user knows (API key id → producer key), which the log must not contradict.
 */
export async function checkProducerSignatures(events: readonly TEvent[], complete: boolean, record: RecordVerdict, pinned: ReadonlyMap<string, string> = new Map()): Promise<void> {
  const check = new ProducerSignatureCheck(pinned);
  for (const event of events) await check.add(event);
  const { failures, unchecked, bound } = check.finish(complete);
  for (const failure of failures) record(false, `producer signature: ${failure}`);
  if (failures.length > 0) return;
  if (bound > 0) record(true, `producer signatures: ${check.signed} event(s) of ${bound} bound API key(s) carry a valid signature by the producer key ${pinned.size ? 'pinned or ' : ''}the log binds, and no event of a bound key lacks one`);
  // Only an unfiltered export holds every binding entry: say what a filtered one could not check.
  if (unchecked > 0) record(true, `producer signatures not checked for ${unchecked} event(s): this filtered export holds no binding entry of their API keys, which may be bound earlier in the log (verify an unfiltered export, or pin a key's binding with --producer KEY_ID=PRODUCER_VKEY)`);
}
