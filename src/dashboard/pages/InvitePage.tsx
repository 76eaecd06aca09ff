/**
 * /invite/:token: what the invitation offers, then accept it: signed in as the invited email (one
 * click), with that account's password, or choosing a password for a new account.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type SubmitEvent, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { AuthFrame } from '../components/AuthForm';
import { FullPageLoading } from '../components/FullPageLoading';
import { formatDateTime } from '../lib/format';
import { ME_KEY, useMe } from '../lib/session';
import { errorMessage, trpc } from '../lib/trpc';

export function InvitePage() {
  const { token = '' } = useParams();
  const me = useMe();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [password, setPassword] = useState('');
  const preview = useQuery({ queryKey: ['invitation', token], queryFn: () => trpc.account.invitation.query({ token }), retry: false });
  const accept = useMutation({
    mutationFn: (withPassword: boolean) => trpc.account.acceptInvitation.mutate(withPassword ? { token, password } : { token }),
    onSuccess: (view) => {
      // What was cached belongs to another session; the invitation itself is used up (asking again would be a 404).
      queryClient.removeQueries({ predicate: (query) => query.queryKey[0] !== 'invitation' });
      queryClient.setQueryData(ME_KEY, view);
      void navigate('/', { replace: true });
    },
  });

  if (preview.isPending || me.isPending) return <FullPageLoading />;
  if (preview.isError) {
    return (
      <AuthFrame title="Invitation" subtitle="This link cannot be used." footer={<Link to="/login">Log in</Link>}>
        <p className="form-error" role="alert">
          {errorMessage(preview.error)}
        </p>
      </AuthFrame>
    );
  }
  const inv = preview.data;
  const signedInAs = me.data?.account.email;
  const submit = (e: SubmitEvent) => {
    e.preventDefault();
    accept.mutate(true);
  };

  return (
    <AuthFrame title={`Join ${inv.organization.name}`} subtitle={`You are invited as ${inv.role}, as ${inv.email}.`} footer={`The link works once and expires at ${formatDateTime(inv.expires_at)}.`}>
      {signedInAs === inv.email ? (
        <button type="button" className="button primary wide" onClick={() => accept.mutate(false)} disabled={accept.isPending}>
          {accept.isPending ? 'Joining…' : `Join as ${inv.email}`}
        </button>
      ) : (
        <form onSubmit={submit} className="stack" noValidate>
          {signedInAs && <p className="muted">You are signed in as {signedInAs}; this invitation is for {inv.email}.</p>}
          <label className="field">
            <span>Email</span>
            <input type="email" name="email" value={inv.email} readOnly autoComplete="username" />
          </label>
          <label className="field">
            <span>{inv.account_exists ? 'Your password' : 'Choose a password (at least 12 characters)'}</span>
            <input type="password" name="password" autoComplete={inv.account_exists ? 'current-password' : 'new-password'} required value={password} onChange={(e) => setPassword(e.target.value)} autoFocus />
          </label>
          <button type="submit" className="button primary wide" disabled={accept.isPending}>
            {accept.isPending ? 'Joining…' : inv.account_exists ? 'Sign in and join' : 'Create account and join'}
          </button>
        </form>
      )}
      {accept.isError && (
        <p className="form-error" role="alert">
          {errorMessage(accept.error)}
        </p>
      )}
    </AuthFrame>
  );
}
