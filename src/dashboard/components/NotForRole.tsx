/**
 * A page a member's role may not use says so, and names who can help, instead of showing a form the
 * server would refuse (and firing the requests it would refuse). The routes wrap such pages in RoleGate.
 */
import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { can, type Permission, ROLE_PERMISSIONS, type Role } from '../../domain/roles';
import { useMe } from '../lib/session';
import { trpc } from '../lib/trpc';

/** The Members page's own cache key and fetcher (same shape), so the list is read once for both. */
const MEMBERS_QUERY_KEY = ['members'] as const;

/** "owners and admins": the roles that have `permission`, as a phrase. */
export function rolesWith(permission: Permission): string {
  const names = (ROLE_PERMISSIONS[permission] as readonly Role[]).map((role) => `${role}s`);
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names[names.length - 1] ?? ''}` : (names[0] ?? '');
}

/** What the page is, who runs it, and what to ask them for. */
export interface GatedPage {
  title: string;
  /** e.g. "API keys are created and managed by" (the roles follow). */
  managedBy: string;
  /** e.g. "to create a key for you". */
  ask: string;
}

/** Renders `children` only for roles with `permission`; the others get NotForRole. */
export function RoleGate({ permission, page, children }: { permission: Permission; page: GatedPage; children: ReactNode }) {
  // The layout renders pages only once the session is known.
  const role = useMe().data?.role;
  if (role === undefined) return null;
  return can(role, permission) ? children : <NotForRole permission={permission} page={page} role={role} />;
}

export function NotForRole({ permission, page, role }: { permission: Permission; page: GatedPage; role: Role }) {
  // Every member may read the member list (members:read), so the people to ask can be named.
  const members = useQuery({ queryKey: MEMBERS_QUERY_KEY, queryFn: () => trpc.dashboard.members.list.query(), enabled: can(role, 'members:read') });
  const helpers = (members.data?.members ?? []).filter((m) => can(m.role, permission));
  const who = rolesWith(permission);
  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>{page.title}</h1>
        </div>
      </header>
      <section className="card not-for-role" data-testid="not-for-role">
        <h2>Not available for your role</h2>
        <p>
          {page.managedBy} {who}. Your role is <strong>{role}</strong>: ask one of them {page.ask}.
        </p>
        {helpers.length > 0 && (
          <ul className="not-for-role-people" aria-label={`The ${who} of this organization`}>
            {helpers.map((m) => (
              <li key={m.account_id}>
                <a href={`mailto:${m.email}`}>{m.email}</a> <span className="badge">{m.role}</span>
              </li>
            ))}
          </ul>
        )}
      </section>
    </div>
  );
}
