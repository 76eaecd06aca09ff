/**
 * The event's producer signature, verified in this browser against the producer key its API key is
 * bound to per the log's binding entry (whose inclusion is proven here too). An event of a key the log
 * does not bind, unsigned, gets nothing: there is nothing to check.
 */
import type { TEvent } from '../../domain/event';
import { formatNumber } from '../lib/format';
import { useProducerCheck } from '../lib/ledgerCheck';
import { ErrorState } from './States';
import { CouldNotVerify } from './TrustVerdictNote';

export function ProducerSignatureNote({ event, servedKey }: { event: TEvent; servedKey: string | undefined }) {
  const { binding, proof, check } = useProducerCheck(event, servedKey);
  if (binding.isError) return <ErrorState error={binding.error} onRetry={() => void binding.refetch()} />;
  // Until the binding is known, and for a key the log does not bind whose event is unsigned, nothing new.
  if (!binding.isSuccess || (binding.data === null && event.producer_signature === undefined)) return null;
  if (proof.isError) return <ErrorState error={proof.error} onRetry={() => void proof.refetch()} />;
  if (binding.data !== null && !proof.data) {
    return <p className="muted" role="status">Waiting for the checkpoint that includes the binding of API key {event.api_key_id} to its producer key…</p>;
  }
  if (check.isPending) return <p className="muted" role="status">Checking the producer&apos;s signature in this browser…</p>;
  if (check.isError) return <CouldNotVerify error={check.error} />;
  const verdict = check.data;
  switch (verdict.kind) {
    case 'unbound':
      return null;
    case 'signed':
      return (
        <ul className="checks" data-testid="event-producer-signed">
          <li className="pass">
            Signed by producer key <code className="wrap">{verdict.producerKey}</code>: its Ed25519 signature of the fields above verifies here
          </li>
          <li className="pass">
            API key <code>{event.api_key_id}</code> is bound to that key per the log&apos;s entry at sequence number {formatNumber(verdict.bindingSeq)}, whose
            inclusion in checkpoint {formatNumber(verdict.bindingTreeSize)} is proven here the same way
          </li>
        </ul>
      );
    case 'failed':
      return (
        <div className="callout danger loud" role="alert" data-testid="event-producer-failed">
          <strong>This event&apos;s producer signature does not check out.</strong>
          <ul className="checks">
            {verdict.failures.map((failure) => (
              <li key={failure} className="fail">{failure}</li>
            ))}
          </ul>
        </div>
      );
  }
}
