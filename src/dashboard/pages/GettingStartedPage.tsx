/**
 * The first page of a new account: base URL, how to get a key, and a curl command that works as pasted.
 * A member who cannot make keys (auditor, viewer) gets what they can do instead: browse and check.
 */
import { Link } from 'react-router';
import { CopyButton } from '../components/CopyButton';
import { rolesWith } from '../components/NotForRole';
import { curlExample } from '../lib/curlExample';
import { useApiKeys, useLatestEvent } from '../lib/queries';
import { useCan, useMe } from '../lib/session';

export function GettingStartedPage() {
  // Only those who may list keys ask for them: the others would get a refusal, not a page.
  return useCan('keys:manage') ? <SetUpSteps /> : <ReaderSteps />;
}

/** For members who read: the events, the ledger, and who sets up keys. */
function ReaderSteps() {
  const role = useMe().data?.role;
  const latest = useLatestEvent();
  const count = latest.data?.data.length ?? 0;
  const verifies = useCan('ledger:verify');
  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>Getting started</h1>
          <p className="muted">
            Your role is <strong>{role}</strong>: you can browse, search and export this organization&apos;s events and check its ledger. API keys and streams are set up by {rolesWith('keys:manage')}.
          </p>
        </div>
      </header>
      <ol className="steps">
        <li className="step card">
          <h2>Browse the events</h2>
          <p>{count > 0 ? 'Filter by actor, action or date, open one to see what changed, and export what you find as CSV.' : 'No events yet: they appear here as soon as an application records them.'}</p>
          <Link className="button primary" to="/events">
            Open the events explorer
          </Link>
        </li>
        <li className="step card">
          <h2>Check the ledger</h2>
          <p>
            Every event is in a signed, append-only log. The ledger page shows its newest signed checkpoint, its witnesses and the key to verify an export offline with
            {verifies ? '; each event page proves that event is in the log.' : '.'}
          </p>
          <Link className="button secondary" to="/ledger">
            Open the ledger
          </Link>
        </li>
      </ol>
    </div>
  );
}

/** For members who set up: a key, an event sent with it, the event found. */
function SetUpSteps() {
  const baseUrl = window.location.origin;
  const keys = useApiKeys();
  const latest = useLatestEvent();
  const hasKey = (keys.data ?? []).some((k) => k.status === 'active');
  const hasEvent = (latest.data?.data.length ?? 0) > 0;
  const example = curlExample(baseUrl);
  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>Getting started</h1>
          <p className="muted">Connect an application in three steps. Your API base URL is <code>{baseUrl}/v1</code>.</p>
        </div>
      </header>
      <ol className="steps">
        <li className={`step card${hasKey ? ' done' : ''}`}>
          <h2>Create an API key</h2>
          <p>Keys belong to your organization. Give each application its own, so you can revoke one without touching the others.</p>
          <Link className="button primary" to="/keys">
            {hasKey ? 'Manage API keys' : 'Create your first key'}
          </Link>
        </li>
        <li className={`step card${hasEvent ? ' done' : ''}`}>
          <h2>Record an event</h2>
          <p>
            Put the key in <code>AUDIT_LEDGER_API_KEY</code> (<code>export AUDIT_LEDGER_API_KEY=alk_…</code>) and run:
          </p>
          <div className="code-block">
            <pre id="curl-example" className="code" aria-label="curl example" tabIndex={0}>
              {example}
            </pre>
            <CopyButton text={example} targetId="curl-example" />
          </div>
          <p className="muted small">
            A field change (<code>field</code>, <code>old_value</code>, <code>new_value</code> in metadata) is shown as a highlighted diff. The full
            reference is at <a href="/docs">/docs</a>.
          </p>
        </li>
        <li className={`step card${hasEvent ? ' done' : ''}`}>
          <h2>Find it</h2>
          <p>{hasEvent ? 'Your first event has arrived.' : 'Events appear here as soon as they are recorded.'}</p>
          <Link className="button secondary" to="/events">
            Open the events explorer
          </Link>
        </li>
      </ol>
    </div>
  );
}
