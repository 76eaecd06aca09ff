/** Sign-up: the account and its organization (free plan) in one step, then the getting-started page. */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type SubmitEvent, useState } from 'react';
import { Link, Navigate, useNavigate } from 'react-router';
import { AuthFrame } from '../components/AuthForm';
import { FullPageLoading } from '../components/FullPageLoading';
import { ME_KEY, useMe } from '../lib/session';
import { errorMessage, trpc } from '../lib/trpc';

const MIN_PASSWORD = 12;

export function SignupPage() {
  const me = useMe();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [form, setForm] = useState({ email: '', password: '', organization_name: '' });
  const signup = useMutation({
    mutationFn: () => trpc.account.signup.mutate(form),
    onSuccess: (view) => {
      queryClient.setQueryData(ME_KEY, view);
      void navigate('/start', { replace: true });
    },
  });

  if (me.isPending) return <FullPageLoading />;
  if (me.data) return <Navigate to="/" replace />;

  const set = (key: keyof typeof form) => (e: { target: { value: string } }) => setForm({ ...form, [key]: e.target.value });
  const submit = (e: SubmitEvent) => {
    e.preventDefault();
    signup.mutate();
  };
  return (
    <AuthFrame
      title="Create your account"
      subtitle="Free plan: 10,000 events a month. No card needed."
      footer={
        <>
          Already have an account? <Link to="/login">Log in</Link>
        </>
      }
    >
      <form onSubmit={submit} className="stack" noValidate>
        <label className="field">
          <span>Work email</span>
          <input type="email" name="email" autoComplete="email" required value={form.email} onChange={set('email')} autoFocus />
        </label>
        <label className="field">
          <span>Password</span>
          <input
            type="password"
            name="password"
            autoComplete="new-password"
            required
            minLength={MIN_PASSWORD}
            value={form.password}
            onChange={set('password')}
            aria-describedby="password-hint"
          />
          <small id="password-hint" className="muted">
            At least {MIN_PASSWORD} characters. A passphrase works well.
          </small>
        </label>
        <label className="field">
          <span>Organization name</span>
          <input type="text" name="organization" autoComplete="organization" required value={form.organization_name} onChange={set('organization_name')} />
        </label>
        {signup.isError && (
          <p className="form-error" role="alert">
            {errorMessage(signup.error)}
          </p>
        )}
        <button type="submit" className="button primary wide" disabled={signup.isPending}>
          {signup.isPending ? 'Creating account…' : 'Create account'}
        </button>
      </form>
    </AuthFrame>
  );
}
