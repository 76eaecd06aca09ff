/** Members: who belongs to the organization with which role, invitations (a link to send), role changes, removal. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type SubmitEvent, useState } from 'react';
import { canManage, ROLES, type Role } from '../../domain/roles';
import { ShownOnce } from '../components/ShownOnce';
import { ErrorState, LoadingRows } from '../components/States';
import { formatDateTime } from '../lib/format';
import { useCan, useMe } from '../lib/session';
import { errorMessage, trpc } from '../lib/trpc';

const MEMBERS_KEY = ['members'] as const;

const ROLE_HELP: Record<Role, string> = {
  owner: 'everything, including members and revoking keys',
  admin: 'keys and streams; manages members other than owners',
  auditor: 'reads events and the ledger with its proofs',
  viewer: 'reads events, exports, sees the ledger',
};

export function MembersPage() {
  const me = useMe().data;
  const queryClient = useQueryClient();
  const manages = useCan('members:manage');
  const members = useQuery({ queryKey: MEMBERS_KEY, queryFn: () => trpc.dashboard.members.list.query() });
  const refresh = () => void queryClient.invalidateQueries({ queryKey: MEMBERS_KEY });
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const [link, setLink] = useState<{ email: string; url: string } | null>(null);

  const invite = useMutation({
    mutationFn: () => trpc.dashboard.members.invite.mutate({ email, role }),
    onSuccess: (created) => {
      // Without PUBLIC_URL the server gives the path only: this page's origin is the installation's.
      setLink({ email: created.email, url: created.url.startsWith('/') ? `${window.location.origin}${created.url}` : created.url });
      setEmail('');
      refresh();
    },
  });
  const changeRole = useMutation({ mutationFn: (v: { account_id: string; role: Role }) => trpc.dashboard.members.changeRole.mutate(v), onSettled: refresh });
  const remove = useMutation({ mutationFn: (accountId: string) => trpc.dashboard.members.remove.mutate({ account_id: accountId }), onSettled: refresh });
  const revoke = useMutation({ mutationFn: (id: string) => trpc.dashboard.members.revokeInvitation.mutate({ id }), onSettled: refresh });
  const leave = useMutation({
    mutationFn: () => trpc.dashboard.members.leave.mutate(),
    onSuccess: () => {
      queryClient.clear();
      window.location.assign('/login');
    },
  });
  const myRole = me?.role ?? 'viewer';
  const grantable = ROLES.filter((r) => canManage(myRole, r));

  const submit = (e: SubmitEvent) => {
    e.preventDefault();
    invite.mutate();
  };
  const failure = [changeRole, remove, revoke, leave].find((m) => m.isError)?.error;

  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>Members</h1>
          <p className="muted">Everyone who can sign in to this organization, and what their role lets them do. Every change here is recorded in the organization&apos;s own audit log.</p>
        </div>
      </header>

      {manages && (
        <section className="card">
          <h2>Invite someone</h2>
          <form className="inline-form" onSubmit={submit}>
            <label className="field grow">
              <span>Email</span>
              <input type="email" name="invite-email" value={email} onChange={(e) => setEmail(e.target.value)} required maxLength={254} />
            </label>
            <label className="field">
              <span>Role</span>
              <select name="invite-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
                {grantable.map((r) => (
                  <option key={r} value={r}>
                    {r}
                  </option>
                ))}
              </select>
            </label>
            <button type="submit" className="button primary" disabled={invite.isPending}>
              {invite.isPending ? 'Inviting…' : 'Create invitation'}
            </button>
          </form>
          <p className="muted small">{ROLES.map((r) => `${r}: ${ROLE_HELP[r]}`).join(' · ')}</p>
          {invite.isError && (
            <p className="form-error" role="alert">
              {errorMessage(invite.error)}
            </p>
          )}
          {link && (
            <ShownOnce title={`Invitation link for ${link.email}`} value={link.url} id="invitation-link" label="Invitation link" onDone={() => setLink(null)}>
              Send this link to {link.email}. It works once, for that email only, and expires in 7 days. It is shown only now.
            </ShownOnce>
          )}
        </section>
      )}

      {failure !== undefined && (
        <p className="form-error" role="alert">
          {errorMessage(failure)}
        </p>
      )}

      <section className="card">
        <h2>Members</h2>
        {members.isPending ? (
          <LoadingRows rows={3} />
        ) : members.isError ? (
          <ErrorState error={members.error} onRetry={() => void members.refetch()} />
        ) : (
          <table className="table" data-testid="members-table">
            <thead>
              <tr>
                <th>Email</th>
                <th>Role</th>
                <th>Joined</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {members.data.members.map((m) => {
                const self = m.account_id === me?.account.id;
                const editable = !self && manages && canManage(myRole, m.role);
                return (
                  <tr key={m.account_id}>
                    <td>
                      {m.email}
                      {self && <span className="muted"> (you)</span>}
                    </td>
                    <td>
                      {editable ? (
                        <select aria-label={`Role of ${m.email}`} value={m.role} onChange={(e) => changeRole.mutate({ account_id: m.account_id, role: e.target.value as Role })}>
                          {grantable.map((r) => (
                            <option key={r} value={r}>
                              {r}
                            </option>
                          ))}
                        </select>
                      ) : (
                        <span className="badge">{m.role}</span>
                      )}
                    </td>
                    <td>{formatDateTime(m.joined_at)}</td>
                    <td className="actions">
                      {editable && (
                        <button type="button" className="button danger-outline small" onClick={() => { if (window.confirm(`Remove ${m.email}? Their sessions end at once.`)) remove.mutate(m.account_id); }}>
                          Remove
                        </button>
                      )}
                      {self && (
                        <button type="button" className="button ghost small" onClick={() => { if (window.confirm('Leave this organization?')) leave.mutate(); }}>
                          Leave
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </section>

      {members.data && members.data.invitations.length > 0 && (
        <section className="card">
          <h2>Pending invitations</h2>
          <table className="table" data-testid="invitations-table">
            <thead>
              <tr>
                <th>Email</th>
                <th>Role</th>
                <th>Invited by</th>
                <th>Expires</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {members.data.invitations.map((inv) => (
                <tr key={inv.id}>
                  <td>{inv.email}</td>
                  <td>{inv.role}</td>
                  <td>{inv.invited_by}</td>
                  <td>{formatDateTime(inv.expires_at)}</td>
                  <td className="actions">
                    {manages && canManage(myRole, inv.role) && (
                      <button type="button" className="button danger-outline small" onClick={() => revoke.mutate(inv.id)}>
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
    </div>
  );
}
