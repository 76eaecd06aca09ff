/** The first page of a new account: base URL, how to get a key, and a curl command that works as pasted. */
import { Link } from 'react-router';
import { CopyButton } from '../components/CopyButton';
import { curlExample } from '../lib/curlExample';
import { useApiKeys, useLatestEvent } from '../lib/queries';

export function GettingStartedPage() {
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
