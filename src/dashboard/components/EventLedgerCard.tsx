/**
 * The event's place in the ledger: which signed checkpoint includes it, verified in this browser with
 * WebCrypto (the event's hash recomputed from the fields shown, the inclusion proof walked to the signed
 * root, the Ed25519 signature checked against the pinned key), the checkpoint against the log this
 * browser remembers, and the producer's signature when the log binds the event's key to one.
 */
import type { TEvent } from '../../domain/event';
import { SELF_AUDIT_KEY_ID } from '../../domain/selfAudit';
import { formatNumber } from '../lib/format';
import { useEventCheck, useEventProof, useLedgerSummary } from '../lib/ledgerCheck';
import { ErrorState } from './States';
import { ProducerSignatureNote } from './ProducerSignatureNote';
import { CouldNotVerify, TrustVerdictNote } from './TrustVerdictNote';

/**
 * Up to this sequence number, an application's event gets a note on why it is not number 1: the
 * organization's own records (its creation, its first keys) took the first numbers, which surprises
 * people at their first event, not later.
 */
const EARLY_SEQ = 10;

export function EventLedgerCard({ event }: { event: TEvent }) {
  const summary = useLedgerSummary();
  const proof = useEventProof(event.id);
  const check = useEventCheck(event, proof.data, summary.data?.verifier_key);
  // People are shown the sequence number (from 1); the leaf index (from 0) is the proofs' own.
  const seq = proof.data ? proof.data.leaf_index + 1 : 0;

  return (
    <section className="card" data-testid="event-ledger">
      <h2>Ledger</h2>
      {proof.isError ? (
        <ErrorState error={proof.error} onRetry={() => void proof.refetch()} />
      ) : summary.isError ? (
        <ErrorState error={summary.error} onRetry={() => void summary.refetch()} />
      ) : !proof.data ? (
        <p className="muted" role="status">Waiting for the checkpoint that includes this event…</p>
      ) : (
        <>
          <p data-testid="event-checkpoint">
            Sequence number {formatNumber(seq)}, included in checkpoint {formatNumber(proof.data.tree_size)}
          </p>
          {seq > 1 && seq <= EARLY_SEQ && event.api_key_id !== SELF_AUDIT_KEY_ID && (
            <p className="muted" data-testid="event-seq-note">
              {seq === 2 ? 'Number 1' : `Numbers 1 to ${formatNumber(seq - 1)}`} went to this organization&apos;s earlier entries: the service&apos;s own
              records (<code>audit_ledger.*</code>: the organization&apos;s creation, its API keys…) take numbers in the same
              sequence as the events you send, so an organization&apos;s first event is rarely number 1.
            </p>
          )}
          {check.isPending ? (
            <p className="muted" role="status">Verifying in this browser…</p>
          ) : check.isError ? (
            <CouldNotVerify error={check.error} />
          ) : (
            <>
              {check.data.failures.length === 0 ? (
                <ul className="checks" data-testid="event-proof-verified">
                  <li className="pass">The event&apos;s SHA-256, recomputed here from the fields above, is at sequence number {formatNumber(seq)} (leaf index {formatNumber(proof.data.leaf_index)} of the Merkle tree)</li>
                  <li className="pass">Its inclusion proof leads to the root of checkpoint {formatNumber(proof.data.tree_size)}</li>
                  <li className="pass">That checkpoint is signed (Ed25519) by the verifier key pinned in this browser</li>
                </ul>
              ) : (
                <div className="callout danger loud" role="alert" data-testid="event-proof-failed">
                  <strong>This event does not verify against the signed ledger.</strong>
                  <ul className="checks">
                    {check.data.failures.map((failure) => (
                      <li key={failure} className="fail">{failure}</li>
                    ))}
                  </ul>
                </div>
              )}
              <ProducerSignatureNote event={event} servedKey={summary.data?.verifier_key} />
              <TrustVerdictNote verdict={check.data.trust} />
            </>
          )}
        </>
      )}
    </section>
  );
}
