/** The signed-in frame: navigation, organization and account, sign-out; pages render in the main area. */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Navigate, NavLink, Outlet, useLocation, useNavigate } from 'react-router';
import { useMe } from '../lib/session';
import { errorMessage, trpc } from '../lib/trpc';
import { FullPageLoading } from './FullPageLoading';

const NAV = [
  { to: '/start', label: 'Getting started' },
  { to: '/events', label: 'Events' },
  { to: '/keys', label: 'API keys' },
  { to: '/usage', label: 'Usage' },
  { to: '/ledger', label: 'Ledger' },
  { to: '/streams', label: 'Streams' },
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

  if (me.isPending) return <FullPageLoading />;
  if (me.isError) return <FullPageLoading error={me.error} onRetry={() => void me.refetch()} />;
  if (!me.data) return <Navigate to={`/login?next=${encodeURIComponent(location.pathname + location.search)}`} replace />;

  const { account, organization } = me.data;
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
          {NAV.map((item) => (
            <NavLink key={item.to} to={item.to} className={({ isActive }) => `nav-link${isActive ? ' active' : ''}`}>
              {item.label}
            </NavLink>
          ))}
        </nav>
        <div className="sidebar-footer">
          <div className="org">
            <span className="org-name" title={organization.name}>
              {organization.name}
            </span>
            <span className="badge plan">{organization.plan} plan</span>
          </div>
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
