/**
 * Sign-in. The message for any failure is the server's one generic sentence. Reached because a session
 * ended (removed from the organization, expired), it first says why.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type SubmitEvent, useState } from 'react';
import { Link, Navigate, useNavigate, useSearchParams } from 'react-router';
import { AuthFrame } from '../components/AuthForm';
import { FullPageLoading } from '../components/FullPageLoading';
import { safeNext } from '../lib/safeNext';
import { ME_KEY, SESSION_END_KEY, sessionEndText, useMe, useSessionEnd } from '../lib/session';
import { errorMessage, trpc } from '../lib/trpc';

export function LoginPage() {
  const me = useMe();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const ended = useSessionEnd();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const login = useMutation({
    mutationFn: () => trpc.account.login.mutate({ email, password }),
    onSuccess: (view) => {
      queryClient.setQueryData(ME_KEY, view);
      queryClient.setQueryData(SESSION_END_KEY, null);
      void navigate(safeNext(params.get('next')), { replace: true });
    },
  });

  if (me.isPending) return <FullPageLoading />;
  if (me.data) return <Navigate to={safeNext(params.get('next'))} replace />;

  const submit = (e: SubmitEvent) => {
    e.preventDefault();
    login.mutate();
  };
  return (
    <AuthFrame
      title="Log in"
      subtitle="Who did what, to which resource, and when."
      footer={
        <>
          New to Audit Ledger? <Link to="/signup">Create an account</Link>
        </>
      }
    >
      {ended && (
        <p className="callout warning session-ended" role="status" data-testid="session-ended">
          {sessionEndText(ended)}
        </p>
      )}
      <form onSubmit={submit} className="stack" noValidate>
        <label className="field">
          <span>Email</span>
          <input type="email" name="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} autoFocus />
        </label>
        <label className="field">
          <span>Password</span>
          <input type="password" name="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        </label>
        {login.isError && (
          <p className="form-error" role="alert">
            {errorMessage(login.error)}
          </p>
        )}
        <button type="submit" className="button primary wide" disabled={login.isPending}>
          {login.isPending ? 'Logging in…' : 'Log in'}
        </button>
      </form>
    </AuthFrame>
  );
}
