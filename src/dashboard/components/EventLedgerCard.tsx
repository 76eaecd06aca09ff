/**
 * The event's place in the ledger: which signed checkpoint includes it, verified in this browser with
 * WebCrypto (the event's hash recomputed from the fields shown, the inclusion proof walked to the signed
 * root, the Ed25519 signature checked against the pinned key), and the checkpoint against the log this
 * browser remembers.
 */
import { useQuery } from '@tanstack/react-query';
import type { TEvent } from '../../domain/event';
import { formatNumber } from '../lib/format';
import { useEventCheck, useLedgerSummary } from '../lib/ledgerCheck';
import { errorCode, trpc } from '../lib/trpc';
import { ErrorState } from './States';
import { CouldNotVerify, TrustVerdictNote } from './TrustVerdictNote';

/** A new event's checkpoint is signed within a second or so: keep asking for a little while. */
const waitingForCheckpoint = (count: number, error: unknown) => errorCode(error) === 'CHECKPOINT_NOT_FOUND' && count < 15;

export function EventLedgerCard({ event }: { event: TEvent }) {
  const summary = useLedgerSummary();
  const proof = useQuery({
    queryKey: ['events', 'proof', event.id],
    queryFn: () => trpc.dashboard.events.proof.query({ id: event.id }),
    retry: waitingForCheckpoint,
    retryDelay: 1000,
  });
  const check = useEventCheck(event, proof.data, summary.data?.verifier_key);

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
            Leaf {formatNumber(proof.data.leaf_index)}, included in checkpoint {formatNumber(proof.data.tree_size)}
          </p>
          {check.isPending ? (
            <p className="muted" role="status">Verifying in this browser…</p>
          ) : check.isError ? (
            <CouldNotVerify error={check.error} />
          ) : (
            <>
              {check.data.failures.length === 0 ? (
                <ul className="checks" data-testid="event-proof-verified">
                  <li className="pass">The event&apos;s SHA-256, recomputed here from the fields above, is leaf {formatNumber(proof.data.leaf_index)}</li>
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
              <TrustVerdictNote verdict={check.data.trust} />
            </>
          )}
        </>
      )}
    </section>
  );
}
