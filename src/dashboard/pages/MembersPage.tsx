/**
 * Members: who belongs to the organization with which role, invitations (a link to send), role changes,
 * removal. Removing, leaving and revoking an invitation each ask first; the only owner is not offered to
 * leave (the server refuses it: LAST_OWNER).
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type SubmitEvent, useState } from 'react';
import { canManage, ROLES, type Role, type TInvitation, type TMember } from '../../domain/roles';
import { ConfirmDialog } from '../components/ConfirmDialog';
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
  // What the open confirmation is about; its dialog runs the action.
  const [confirming, setConfirming] = useState<{ remove: TMember } | { revoke: TInvitation } | 'leave' | null>(null);
  const remove = (accountId: string) => trpc.dashboard.members.remove.mutate({ account_id: accountId }).finally(refresh);
  const revoke = (id: string) => trpc.dashboard.members.revokeInvitation.mutate({ id }).finally(refresh);
  const leave = async () => {
    await trpc.dashboard.members.leave.mutate();
    queryClient.clear();
    window.location.assign('/login');
  };
  const myRole = me?.role ?? 'viewer';
  const grantable = ROLES.filter((r) => canManage(myRole, r));

  const submit = (e: SubmitEvent) => {
    e.preventDefault();
    invite.mutate();
  };
  const failure = changeRole.isError ? changeRole.error : undefined;
  const owners = members.data?.members.filter((m) => m.role === 'owner').length ?? 0;
  const onlyOwner = myRole === 'owner' && owners === 1;
  const organization = me?.organization.name ?? 'this organization';

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
          <form className="inline-form invite-form" onSubmit={submit}>
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
          <table className="table members-table" data-testid="members-table">
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
                  <tr key={m.account_id} data-testid={`member-row-${m.email}`}>
                    <td data-label="Email" className="member-email">
                      {m.email}
                      {self && <span className="muted"> (you)</span>}
                    </td>
                    <td data-label="Role">
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
                    <td data-label="Joined">{formatDateTime(m.joined_at)}</td>
                    <td className="actions">
                      {editable && (
                        <button type="button" className="button danger-outline small" onClick={() => setConfirming({ remove: m })}>
                          Remove
                        </button>
                      )}
                      {self &&
                        (onlyOwner ? (
                          <div className="leave-blocked">
                            <button type="button" className="button ghost small" disabled aria-describedby="leave-why">
                              Leave
                            </button>
                            <span id="leave-why" className="muted small">
                              You are the only owner: make someone else an owner first.
                            </span>
                          </div>
                        ) : (
                          <button type="button" className="button ghost small" onClick={() => setConfirming('leave')}>
                            Leave
                          </button>
                        ))}
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
                <tr key={inv.id} data-testid={`invitation-row-${inv.email}`}>
                  <td data-label="Email" className="member-email">{inv.email}</td>
                  <td data-label="Role">{inv.role}</td>
                  <td data-label="Invited by" className="member-email">{inv.invited_by}</td>
                  <td data-label="Expires">{formatDateTime(inv.expires_at)}</td>
                  <td className="actions">
                    {manages && canManage(myRole, inv.role) && (
                      <button type="button" className="button danger-outline small" onClick={() => setConfirming({ revoke: inv })}>
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

      {confirming === 'leave' ? (
        <ConfirmDialog title={`Leave ${organization}?`} confirmLabel="Leave organization" busyLabel="Leaving…" onConfirm={leave} onClose={() => setConfirming(null)} testId="confirm-leave">
          <p>You lose access at once, on every device. To come back, an owner or admin must invite you again.</p>
        </ConfirmDialog>
      ) : confirming && 'remove' in confirming ? (
        <ConfirmDialog title={`Remove ${confirming.remove.email}?`} confirmLabel="Remove member" busyLabel="Removing…" onConfirm={() => remove(confirming.remove.account_id)} onClose={() => setConfirming(null)} testId="confirm-remove">
          <p>
            Their sessions in {organization} end at once; the next time they click, the sign-in page tells them they were removed. What they did stays in the audit log.
          </p>
        </ConfirmDialog>
      ) : confirming && 'revoke' in confirming ? (
        <ConfirmDialog title={`Revoke the invitation for ${confirming.revoke.email}?`} confirmLabel="Revoke invitation" busyLabel="Revoking…" onConfirm={() => revoke(confirming.revoke.id)} onClose={() => setConfirming(null)} testId="confirm-revoke">
          <p>The link stops working at once. You can invite {confirming.revoke.email} again later.</p>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}
