/** API keys: create (value shown once), list, revoke after confirmation, bind to a producer's key. */
import { FormHint } from '../components/FormHint';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type SubmitEvent, useEffect, useRef, useState } from 'react';
import { ShownOnce } from '../components/ShownOnce';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { formatDateTime, formatRelative } from '../lib/format';
import { KEYS_QUERY_KEY, useApiKeys } from '../lib/queries';
import { canGrant } from '../../domain/roles';
import { useCan, useMe } from '../lib/session';
import { errorMessage, trpc } from '../lib/trpc';

type KeyView = Awaited<ReturnType<typeof trpc.dashboard.keys.list.query>>[number];
type Scope = KeyView['scopes'][number];
/** The scopes a key can have (src/domain/apiKey.ts), in the order the API lists them. */
const ALL_SCOPES: readonly Scope[] = ['events:write', 'events:read', 'ledger:read', 'retention:manage'];
/** What a new key starts with (DEFAULT_SCOPES): `retention:manage` is ticked by an owner's choice only. */
const DEFAULT_SCOPES: readonly Scope[] = ['events:write', 'events:read', 'ledger:read'];
/** What each scope lets a key do, beside its checkbox. */
const SCOPE_HINTS: Record<Scope, string> = {
  'events:write': 'record events',
  'events:read': 'list, read and export events; manage streams',
  'ledger:read': 'checkpoints and proofs',
  'retention:manage': 'retention policy, legal holds, erasure',
};

export function KeysPage() {
  const queryClient = useQueryClient();
  const keys = useApiKeys();
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Scope[]>([...DEFAULT_SCOPES]);
  const [created, setCreated] = useState<{ key: string; name: string } | null>(null);
  const [revoking, setRevoking] = useState<KeyView | null>(null);
  const [binding, setBinding] = useState<KeyView | null>(null);
  // Checked on submit, said beside the button: a greyed-out button does not say why.
  const [invalid, setInvalid] = useState<string | null>(null);
  // Revoking is for owners (domain/roles.ts); admins create keys.
  const mayRevoke = useCan('keys:revoke');
  // Only those who manage retention themselves (owners) may give a key that power (the server's own rule).
  const role = useMe().data?.role;
  const grantable = ALL_SCOPES.filter((scope) => role !== undefined && canGrant(role, scope));

  const create = useMutation({
    mutationFn: () => trpc.dashboard.keys.create.mutate({ name, scopes }),
    onSuccess: (result) => {
      setCreated({ key: result.key, name: result.apiKey.name });
      setName('');
      void queryClient.invalidateQueries({ queryKey: KEYS_QUERY_KEY });
    },
  });

  const submit = (e: SubmitEvent) => {
    e.preventDefault();
    const problem = name.trim() === '' ? 'Give the key a name first: the application or service that will use it.' : scopes.length === 0 ? 'Choose at least one scope.' : null;
    setInvalid(problem);
    if (!problem) create.mutate();
  };

  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>API keys</h1>
          <p className="muted">Applications send events with a key in <code>Authorization: Bearer …</code>. Revoked keys stop working at once.</p>
        </div>
      </header>

      <section className="card">
        <h2>Create a key</h2>
        <form className="key-form" onSubmit={submit} noValidate>
          <label className="field">
            <span>Name</span>
            <input
              name="key-name"
              placeholder="e.g. billing-service production"
              value={name}
              onChange={(e) => { setName(e.target.value); setInvalid(null); }}
              maxLength={100}
              aria-invalid={invalid !== null && name.trim() === ''}
              aria-describedby="key-form-hint"
            />
          </label>
          <fieldset className="key-scopes">
            <legend>Scopes</legend>
            <div className="checkbox-group">
              {grantable.map((scope) => (
                <label key={scope} className="checkbox-option">
                  <input
                    type="checkbox"
                    checked={scopes.includes(scope)}
                    onChange={(e) => { setScopes(e.target.checked ? ALL_SCOPES.filter((s) => s === scope || scopes.includes(s)) : scopes.filter((s) => s !== scope)); setInvalid(null); }}
                  />
                  <span>
                    <code>{scope}</code> <span className="muted small">{SCOPE_HINTS[scope]}</span>
                  </span>
                </label>
              ))}
            </div>
          </fieldset>
          <div className="form-actions">
            <button type="submit" className="button primary" disabled={create.isPending}>
              {create.isPending ? 'Creating…' : 'Create key'}
            </button>
            <FormHint id="key-form-hint" problem={invalid}>The key is shown once, right after it is created.</FormHint>
          </div>
        </form>
        {create.isError && (
          <p className="form-error" role="alert">
            {errorMessage(create.error)}
          </p>
        )}
        {created && (
          <ShownOnce title={`Copy the key “${created.name}” now`} value={created.key} id="new-key-value" label="New API key" onDone={() => setCreated(null)}>
            This is the only time it is shown. Store it in your secret manager; if it is lost, create another and revoke this one.
          </ShownOnce>
        )}
      </section>

      <section className="card flush">
        <h2 className="card-title">Keys</h2>
        {keys.isPending ? (
          <LoadingRows rows={3} />
        ) : keys.isError ? (
          <ErrorState error={keys.error} onRetry={() => void keys.refetch()} />
        ) : keys.data.length === 0 ? (
          <EmptyState title="No keys yet">Create one above to start sending events.</EmptyState>
        ) : (
          <div className="table-wrap">
            <table className="table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Key</th>
                  <th>Scopes</th>
                  <th>Created</th>
                  <th>Last used</th>
                  <th>Status</th>
                  <th>Producer key</th>
                  <th>
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.data.map((k) => (
                  <tr key={k.id} data-testid={`key-row-${k.name}`}>
                    <td data-label="Name">{k.name}</td>
                    <td data-label="Key">
                      <code>
                        {k.prefix}…{k.last4}
                      </code>
                    </td>
                    <td data-label="Scopes" className="small">{k.scopes.length === ALL_SCOPES.length ? 'all' : k.scopes.join(', ')}</td>
                    <td data-label="Created">{formatDateTime(k.created_at)}</td>
                    <td data-label="Last used" title={k.last_used_at ? formatDateTime(k.last_used_at) : undefined}>{k.last_used_at ? formatRelative(k.last_used_at) : 'Never'}</td>
                    <td data-label="Status">
                      <span className={`badge ${k.status}`}>{k.status === 'active' ? 'Active' : 'Revoked'}</span>
                      {k.revoked_at && <div className="muted small">{formatDateTime(k.revoked_at)}</div>}
                    </td>
                    <td data-label="Producer key" data-testid="key-producer">
                      {k.producer_key === null ? <span className="muted">unsigned</span> : <code className="wrap small">{k.producer_key}</code>}
                    </td>
                    <td className="actions">
                      {k.producer_bindable && (
                        <button type="button" className="button secondary small" onClick={() => setBinding(k)}>
                          Bind producer key
                        </button>
                      )}
                      {k.status === 'active' && mayRevoke && (
                        <button type="button" className="button danger-outline small" onClick={() => setRevoking(k)}>
                          Revoke
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {revoking && <RevokeDialog apiKey={revoking} onClose={() => setRevoking(null)} />}
      {binding && <BindProducerDialog apiKey={binding} onClose={() => setBinding(null)} />}
    </div>
  );
}

/** A modal confirmation (native <dialog>: focus is held inside, Escape cancels). */
function RevokeDialog({ apiKey, onClose }: { apiKey: KeyView; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => trpc.dashboard.keys.revoke.mutate({ id: apiKey.id }),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: KEYS_QUERY_KEY });
      onClose();
    },
  });
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  return (
    <dialog ref={ref} className="dialog" onClose={onClose} aria-labelledby="revoke-title">
      <h2 id="revoke-title">Revoke “{apiKey.name}”?</h2>
      <p>
        Requests with <code>{apiKey.prefix}…{apiKey.last4}</code> will be refused with <code>401 Invalid API key</code> from now on. This cannot be undone.
      </p>
      {revoke.isError && (
        <p className="form-error" role="alert">
          {errorMessage(revoke.error)}
        </p>
      )}
      <div className="dialog-actions">
        <button type="button" className="button secondary" onClick={onClose} autoFocus>
          Cancel
        </button>
        <button type="button" className="button danger" onClick={() => revoke.mutate()} disabled={revoke.isPending}>
          {revoke.isPending ? 'Revoking…' : 'Revoke key'}
        </button>
      </div>
    </dialog>
  );
}

/** Binding a key to a producer's Ed25519 key: pasted as its verifier key text; the server checks it and says why not. */
function BindProducerDialog({ apiKey, onClose }: { apiKey: KeyView; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const queryClient = useQueryClient();
  const [producerKey, setProducerKey] = useState('');
  const [invalid, setInvalid] = useState<string | null>(null);
  const bind = useMutation({
    mutationFn: () => trpc.dashboard.keys.bindProducer.mutate({ id: apiKey.id, producer_key: producerKey }),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: KEYS_QUERY_KEY });
      onClose();
    },
  });
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  const submit = (e: SubmitEvent) => {
    e.preventDefault();
    const problem = producerKey.trim() === '' ? 'Paste the producer\'s verifier key first.' : null;
    setInvalid(problem);
    if (!problem) bind.mutate();
  };
  return (
    <dialog ref={ref} className="dialog" onClose={onClose} aria-labelledby="bind-title">
      <h2 id="bind-title">Bind “{apiKey.name}” to a producer key</h2>
      <p data-testid="bind-explained">
        Once bound, every event <code>{apiKey.prefix}…{apiKey.last4}</code> sends must be signed by the producer holding this Ed25519 key (the
        service refuses any other, and verifiers check each signature), so bind it before the key&apos;s first event: a key that has sent events
        cannot be bound, and a binding cannot be undone.
      </p>
      <form onSubmit={submit} noValidate>
        <label className="field">
          <span>Producer verifier key</span>
          <textarea
            name="producer-key"
            rows={3}
            placeholder="name+1a2b3c4d+AeGx…"
            value={producerKey}
            onChange={(e) => { setProducerKey(e.target.value); setInvalid(null); }}
            maxLength={512}
            spellCheck={false}
            aria-invalid={invalid !== null}
            aria-describedby="bind-form-hint"
          />
        </label>
        <FormHint id="bind-form-hint" problem={invalid}>{'Its verifier key text, <name>+<key id>+<base64 key> (C2SP signed note), as the client package or note.GenerateKey makes it.'}</FormHint>
        {bind.isError && (
          <p className="form-error" role="alert">
            {errorMessage(bind.error)}
          </p>
        )}
        <div className="dialog-actions">
          <button type="button" className="button secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="button primary" disabled={bind.isPending}>
            {bind.isPending ? 'Binding…' : 'Bind key'}
          </button>
        </div>
      </form>
    </dialog>
  );
}
