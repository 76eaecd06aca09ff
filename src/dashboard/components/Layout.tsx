/** The signed-in frame: navigation, organization and account, sign-out; pages render in the main area. */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Navigate, NavLink, Outlet, useLocation, useNavigate } from 'react-router';
import { can, type Permission } from '../../domain/roles';
import { ME_KEY, useMe } from '../lib/session';
import { errorMessage, trpc } from '../lib/trpc';
import { FullPageLoading } from './FullPageLoading';

/** Each item shows for the roles whose permission it names (domain/roles.ts); the server refuses the rest anyway. */
const NAV: { to: string; label: string; permission: Permission }[] = [
  { to: '/start', label: 'Getting started', permission: 'keys:manage' },
  { to: '/events', label: 'Events', permission: 'events:read' },
  { to: '/keys', label: 'API keys', permission: 'keys:manage' },
  { to: '/usage', label: 'Usage', permission: 'events:read' },
  { to: '/ledger', label: 'Ledger', permission: 'ledger:read' },
  { to: '/streams', label: 'Streams', permission: 'streams:manage' },
  { to: '/members', label: 'Members', permission: 'members:read' },
  { to: '/retention', label: 'Retention', permission: 'events:read' },
];

export function Layout() {
  const me = useMe();
  const location = useLocation();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const logout = useMutation({
    mutationFn: () => trpc.account.logout.mutate(),
    onSuccess: () => {
      queryClient.clear();
      void navigate('/login', { replace: true });
    },
  });
  const switchOrg = useMutation({
    mutationFn: (organizationId: string) => trpc.account.switchOrganization.mutate({ organization_id: organizationId }),
    onSuccess: (view) => {
      // Everything cached belongs to the organization left behind.
      queryClient.clear();
      queryClient.setQueryData(ME_KEY, view);
      void navigate('/', { replace: true });
    },
  });

  if (me.isPending) return <FullPageLoading />;
  if (me.isError) return <FullPageLoading error={me.error} onRetry={() => void me.refetch()} />;
  if (!me.data) return <Navigate to={`/login?next=${encodeURIComponent(location.pathname + location.search)}`} replace />;

  const { account, organization, role, organizations } = me.data;
  return (
    <div className="app-shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <aside className="sidebar">
        <div className="brand">
          <img src="/favicon.svg" alt="" width={28} height={28} />
          <span>Audit Ledger</span>
        </div>
        <nav aria-label="Main">
          {NAV.filter((item) => can(role, item.permission)).map((item) => (
            <NavLink key={item.to} to={item.to} className={({ isActive }) => `nav-link${isActive ? ' active' : ''}`}>
              {item.label}
            </NavLink>
          ))}
        </nav>
        <div className="sidebar-footer">
          {organizations.length > 1 ? (
            <label className="org-switch">
              <span className="visually-hidden">Organization</span>
              <select data-testid="org-switcher" value={organization.id} disabled={switchOrg.isPending} onChange={(e) => switchOrg.mutate(e.target.value)}>
                {organizations.map((o) => (
                  <option key={o.id} value={o.id}>
                    {o.name} ({o.role})
                  </option>
                ))}
              </select>
            </label>
          ) : (
            <div className="org">
              <span className="org-name" title={organization.name}>
                {organization.name}
              </span>
            </div>
          )}
          <div className="org sidebar-badges">
            <span className="badge plan">{organization.plan} plan</span>
            <span className="badge role" title="Your role in this organization" data-testid="my-role">{role}</span>
          </div>
          {switchOrg.isError && (
            <p className="form-error" role="alert">
              {errorMessage(switchOrg.error)}
            </p>
          )}
          <div className="account-email" title={account.email}>
            {account.email}
          </div>
          <button type="button" className="button ghost" onClick={() => logout.mutate()} disabled={logout.isPending}>
            {logout.isPending ? 'Logging out…' : 'Log out'}
          </button>
          {logout.isError && (
            <p className="form-error" role="alert">
              {errorMessage(logout.error)}
            </p>
          )}
        </div>
      </aside>
      <main id="main" className="main" tabIndex={-1}>
        <Outlet />
      </main>
    </div>
  );
}
