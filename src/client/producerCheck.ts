/**
 * Producer signatures checked over exported events (domain/producerSignature.ts), for `verify`: the
 * bindings come from the log's own binding entries among them. Says nothing when the events hold
 * neither a binding nor a signature (no key of the organization is bound).
 */
import type { TEvent } from '../domain/event';
import { ProducerSignatureCheck } from '../domain/producerSignature';
import type { RecordVerdict } from './verdicts';

/** `events`: events proven in the signed tree; `complete`: they are the whole log. */
export async function checkProducerSignatures(events: readonly TEvent[], complete: boolean, record: RecordVerdict): Promise<void> {
  const check = new ProducerSignatureCheck();
  for (const event of events) await check.add(event);
  const { failures, unchecked, bound } = check.finish(complete);
  for (const failure of failures) record(false, `producer signature: ${failure}`);
  if (failures.length === 0 && (bound > 0 || unchecked > 0)) {
    const notChecked = unchecked ? `; ${unchecked} signed event(s) not checked: their key's binding entry is not among the events this filtered export holds` : '';
    record(true, `producer signatures: ${check.signed} event(s) of ${bound} bound API key(s) carry a valid signature by the producer key the log binds, and no event of a bound key lacks one${notChecked}`);
  }
}
