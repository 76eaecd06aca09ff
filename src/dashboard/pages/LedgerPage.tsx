/**
 * The ledger: the organization's newest signed checkpoint, the verifier key to pin, and the commands
 * that verify an export offline with it.
 */
import type { TLedgerSummary } from '../../domain/ledger/schemas';
import { CopyButton } from '../components/CopyButton';
import { ErrorState, LoadingRows } from '../components/States';
import { CouldNotVerify, TrustVerdictNote } from '../components/TrustVerdictNote';
import { formatDateTime, formatNumber, plural } from '../lib/format';
import { useCheckpointTrust, useLedgerSummary, useWitnessCheck } from '../lib/ledgerCheck';

/** The key names that signed a note: its signature lines ("— <name> <signature>") after the blank line. */
function signersOf(note: string): string[] {
  const signatures = note.slice(note.indexOf('\n\n') + 2);
  return signatures.split('\n').filter((line) => line.startsWith('— ')).map((line) => line.slice(2).split(' ')[0] ?? '');
}

export function LedgerPage() {
  const ledger = useLedgerSummary(5000);
  const trust = useCheckpointTrust(ledger.data?.checkpoint?.checkpoint, ledger.data?.verifier_key);
  const witnessCheck = useWitnessCheck(ledger.data);
  const origin = window.location.origin;
  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>Ledger</h1>
          <p className="muted">
            Every event is a leaf of your organization&apos;s signed Merkle log. Anyone holding the verifier key can check, offline, that an
            export is exactly what was recorded, and that the log was never rewritten.
          </p>
        </div>
      </header>
      {ledger.isPending ? (
        <LoadingRows rows={4} label="Loading the ledger…" />
      ) : ledger.isError ? (
        <ErrorState error={ledger.error} onRetry={() => void ledger.refetch()} />
      ) : (
        <>
          <section className="card" data-testid="ledger-checkpoint">
            <h2>Newest checkpoint</h2>
            {ledger.data.checkpoint ? (
              <CheckpointDetails checkpoint={ledger.data.checkpoint} witnessesConfigured={ledger.data.quorum !== null} />
            ) : (
              <p className="muted">No checkpoint yet: it is signed within a second of your first event.</p>
            )}
            {trust.data && <TrustVerdictNote verdict={trust.data} />}
            {trust.isError && <CouldNotVerify error={trust.error} />}
          </section>
          <section className="card" data-testid="ledger-witnesses">
            <h2>Witnesses</h2>
            {ledger.data.quorum === null ? (
              <p className="muted">
                No witnesses are configured (<code>LEDGER_WITNESS_POLICY</code>): checkpoints are signed by the operator&apos;s key only, and
                only a checkpoint you keep yourself shows a rewrite.
              </p>
            ) : (
              <>
                <p className="muted">
                  Every checkpoint of this log is an entry of the installation log, whose checkpoints independent witnesses cosign once they
                  extend the last they saw. Quorum: <code>{ledger.data.quorum}</code>.
                </p>
                <table className="table" data-testid="witness-table">
                  <thead>
                    <tr><th>Witness</th><th>Newest cosigned</th><th>Status</th></tr>
                  </thead>
                  <tbody>
                    {ledger.data.witnesses.map((w) => (
                      <tr key={w.verifier_key}>
                        <td><code>{w.name}</code></td>
                        <td>{w.cosigned_size ? `installation tree of ${formatNumber(w.cosigned_size)}` : 'none yet'}</td>
                        <td className={w.alarm ? 'form-error' : undefined} data-testid={w.alarm ? 'witness-alarm' : undefined}>
                          {w.alarm ? `ALARM: ${w.alarm}` : w.error ?? 'ok'}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
                {ledger.data.checkpoint?.installation ? (
                  <p data-testid="witness-verdict" className={witnessCheck.data && witnessCheck.data.failures.length === 0 ? undefined : 'form-error'}>
                    {witnessCheck.data
                      ? witnessCheck.data.failures.length === 0
                        ? `Checked in this browser: the newest checkpoint is in installation checkpoint ${formatNumber(witnessCheck.data.size)}, cosigned by ${witnessCheck.data.cosigned.join(', ') || 'no witness'}${ledger.data.checkpoint.installation.witnessed ? ' (quorum met).' : ' (quorum not met yet).'}`
                        : `Not verified: ${witnessCheck.data.failures.join('; ')}`
                      : witnessCheck.isError
                        ? `Could not verify: ${witnessCheck.error.message}`
                        : 'Checking the cosignatures…'}
                  </p>
                ) : (
                  <p className="muted">The newest checkpoint is not in an installation checkpoint yet.</p>
                )}
              </>
            )}
          </section>
          <section className="card">
            <div className="card-title-row">
              <h2>Verifier key</h2>
              <CopyButton text={ledger.data.verifier_key} targetId="verifier-key" />
            </div>
            <p className="muted">Pin it where your auditors keep it: every checkpoint is signed with the matching private key, which never leaves the server&apos;s key file.</p>
            <pre id="verifier-key" className="code" data-testid="verifier-key">{ledger.data.verifier_key}</pre>
          </section>
          <section className="card ledger-verify">
            <h2>Verify an export</h2>
            <pre className="code">{`npx audit-ledger export --url ${origin} --key <API key> --out export.json --with-proofs
npx audit-ledger verify --verifier-key "${ledger.data.verifier_key}" \\
  --events export.json --proofs export.json.proofs.json --state auditor.checkpoint --url ${origin} --key <API key>`}</pre>
            <p className="muted">
              <code>verify</code> recomputes each event&apos;s hash, checks it against the signed root, and with <code>--state</code> proves that
              the log only grew since the last verification.
            </p>
          </section>
        </>
      )}
    </div>
  );
}

/** The checkpoint as a definition list: which log, how many events, the root hash (wrapping, never wider than the screen), when, and who signed. */
function CheckpointDetails({ checkpoint, witnessesConfigured }: { checkpoint: NonNullable<TLedgerSummary['checkpoint']>; witnessesConfigured: boolean }) {
  const installation = checkpoint.installation;
  const cosigners = installation ? signersOf(installation.checkpoint).filter((name) => `${name}/installation` !== installation.origin) : [];
  return (
    <dl className="details checkpoint-details">
      <dt>Log</dt>
      <dd>
        <code className="hash">{checkpoint.origin}</code>
      </dd>
      <dt>Events in the log</dt>
      <dd data-testid="ledger-size">{formatNumber(checkpoint.tree_size)}</dd>
      <dt>Root hash</dt>
      <dd>
        <code className="hash" data-testid="ledger-root-hash">{checkpoint.root_hash}</code>
      </dd>
      <dt>Signed</dt>
      <dd>{formatDateTime(checkpoint.signed_at)}</dd>
      <dt>Signatures</dt>
      <dd>
        {signersOf(checkpoint.checkpoint).map((name) => (
          <code key={name} className="hash signer">{name}</code>
        ))}
      </dd>
      {witnessesConfigured && (
        <>
          <dt>Witnessed</dt>
          <dd data-testid="ledger-witnessed">
            {installation
              ? `In installation checkpoint ${formatNumber(installation.tree_size)}, cosigned by ${cosigners.length ? plural(cosigners.length, 'witness', 'witnesses') : 'no witness yet'}${installation.witnessed ? ' (quorum met)' : ' (quorum not met yet)'}`
              : 'Not in an installation checkpoint yet'}
          </dd>
        </>
      )}
    </dl>
  );
}
