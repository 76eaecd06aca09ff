/** What this browser's memory of the log says about a checkpoint: calm when it extends it, loud when not. */
import type { TrustVerdict } from '../lib/ledgerTrust';
import { formatDateTime, plural } from '../lib/format';

export function TrustVerdictNote({ verdict }: { verdict: TrustVerdict }) {
  switch (verdict.kind) {
    case 'rewritten':
      return (
        <div className="callout danger loud" role="alert" data-testid="ledger-rewritten">
          <strong>The ledger was rewritten.</strong> This browser found that {verdict.reason}
          {verdict.verifiedAt && <> (it verified the earlier one on {formatDateTime(verdict.verifiedAt)})</>}. Events it saw may have
          been changed or removed since. Keep this page, export the log and its proofs, and tell your security team.
        </div>
      );
    case 'key-changed':
      return (
        <div className="callout danger loud" role="alert" data-testid="ledger-key-changed">
          <strong>The ledger&apos;s signing key changed.</strong> This browser pinned <code className="wrap">{verdict.pinned}</code>, but the server
          now presents <code className="wrap">{verdict.served}</code>. Nothing signed by the new key is trusted here until your operator explains
          the change.
        </div>
      );
    case 'first':
      return (
        <p className="muted" data-testid="ledger-trust">
          First checkpoint this browser verified: it now remembers it, with the key, and checks that every later checkpoint extends it.
        </p>
      );
    case 'same':
      return <p className="muted" data-testid="ledger-trust">The same checkpoint this browser verified before.</p>;
    case 'extends':
      return (
        <p className="muted" data-testid="ledger-trust">
          Extends the checkpoint of {plural(verdict.from, 'event')} this browser verified before: proven, nothing rewritten.
        </p>
      );
    case 'earlier':
      return (
        <p className="muted" data-testid="ledger-trust">
          An earlier checkpoint than the one of {plural(verdict.remembered, 'event')} this browser verified, which extends it: proven.
        </p>
      );
  }
}

/** A check that could not run (a proof the server would not give, a browser without WebCrypto Ed25519). */
export function CouldNotVerify({ error }: { error: Error }) {
  return (
    <div className="error-state" role="alert">
      <h3>Could not verify in this browser</h3>
      <p>{error.message}</p>
    </div>
  );
}
