/**
 * Members and roles. The role matrix is read from the server's own tables: every session procedure of
 * the router names its permission in its meta, ROLE_PERMISSIONS says which roles have it, and each
 * procedure is called as each role over /trpc: refused 403 INSUFFICIENT_ROLE exactly where the table
 * says, and otherwise let through (whatever the call's own answer). Then the rules the table cannot
 * show: owners managed by owners only, the last owner, removal ending sessions at once, invitations
 * (single use, expiry, bound to an email), switching organizations.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { can, type Permission, ROLE_PERMISSIONS, ROLES, type Role } from '../../src/domain/roles';
import { appRouter } from '../../src/trpc/router';
import { startTestApp, type TestApp } from '../helpers/harness';
import { failure, uniqueEmail, WebSession } from '../helpers/webSession';

const PASSWORD = 'correct horse battery staple';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ label: 'roles' });
});
afterAll(() => app.close());

/** An organization with one member of each role, each with a signed-in session. */
async function team(): Promise<Record<Role, WebSession> & { orgId: string }> {
  const owner = new WebSession(app.url);
  const view = await owner.signup(uniqueEmail('owner'), PASSWORD, 'Team');
  const sessions = { owner } as Record<Role, WebSession>;
  for (const role of ['admin', 'auditor', 'viewer'] as const) sessions[role] = await join(owner, role);
  return { ...sessions, orgId: view.organization.id };
}

/** Invites a new email with `role` and accepts as a new account; the new member's session. */
async function join(inviter: WebSession, role: Role, email = uniqueEmail(role)): Promise<WebSession> {
  const invitation = await inviter.client.dashboard.members.invite.mutate({ email, role });
  const member = new WebSession(app.url);
  const view = await member.client.account.acceptInvitation.mutate({ token: invitation.token, password: PASSWORD });
  expect(view.role).toBe(role);
  return member;
}

type Procedure = { _def: { type: 'query' | 'mutation'; meta?: { permission?: Permission } } };
const PROCEDURES = Object.entries((appRouter as unknown as { _def: { procedures: Record<string, Procedure> } })._def.procedures)
  .filter(([, p]) => p._def.meta?.permission !== undefined)
  .map(([path, p]) => ({ path, type: p._def.type, permission: p._def.meta?.permission as Permission }));

/**
 * An input each session procedure accepts or answers without changing anything that matters here (an
 * unknown id: 404; a bad destination: 400). Ending the session (logout, leave) is tested apart.
 */
const INPUTS: Record<string, unknown> = {
  'account.switchOrganization': { organization_id: 'org_none' },
  'dashboard.keys.list': undefined,
  'dashboard.keys.create': { name: 'matrix' },
  'dashboard.keys.revoke': { id: 'key_none' },
  'dashboard.keys.bindProducer': { id: 'key_none', producer_key: 'x' },
  'dashboard.events.producerBinding': { api_key_id: 'key_none' },
  'dashboard.events.list': {},
  'dashboard.events.get': { id: randomUUID() },
  'dashboard.events.proof': { id: randomUUID() },
  'dashboard.usage': undefined,
  'dashboard.streams.list': undefined,
  'dashboard.streams.create': { name: 'x', destination: { type: 'webhook', url: 'not a url' } },
  'dashboard.streams.pause': { id: randomUUID() },
  'dashboard.streams.resume': { id: randomUUID() },
  'dashboard.streams.test': { id: randomUUID() },
  'dashboard.streams.retry': { id: randomUUID() },
  'dashboard.streams.remove': { id: randomUUID() },
  'dashboard.ledger.summary': undefined,
  'dashboard.ledger.consistency': { from: 1 },
  'dashboard.members.list': undefined,
  'dashboard.members.invite': { email: 'x@example.com', role: 'viewer' },
  'dashboard.members.revokeInvitation': { id: 'inv_none' },
  'dashboard.members.changeRole': { account_id: 'acct_none', role: 'viewer' },
  'dashboard.members.remove': { account_id: 'acct_none' },
  'dashboard.retention.view': undefined,
  'dashboard.retention.setPolicy': { days: 1 },
  'dashboard.retention.placeHold': { filter: {}, reason: '' },
  'dashboard.retention.releaseHold': { id: 'hold_none' },
  'dashboard.retention.erase': { event_ids: [randomUUID()], reason: 'data_subject_request' },
};
const ENDS_SESSION = ['account.logout', 'dashboard.members.leave'];

test('every session procedure names a permission, and the matrix below covers each one', () => {
  expect(PROCEDURES.map((p) => p.path).sort()).toEqual([...Object.keys(INPUTS), ...ENDS_SESSION].sort());
});

test('role matrix: every session procedure × every role, refused with 403 INSUFFICIENT_ROLE exactly where ROLE_PERMISSIONS says', async () => {
  const members = await team();
  const outcomes: string[] = [];
  for (const role of ROLES) {
    for (const { path, type, permission } of PROCEDURES.filter((p) => !ENDS_SESSION.includes(p.path))) {
      const res = await members[role].raw(path, INPUTS[path], { method: type === 'query' ? 'GET' : 'POST' });
      const refused = res.status === 403 && res.body?.error?.data?.appCode === 'INSUFFICIENT_ROLE';
      if (refused !== !can(role, permission) || res.status === 401 || res.status >= 500) outcomes.push(`${role} ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 160)}`);
      if (refused) expect(res.body.error.message).toBe(`Your role (${role}) does not allow this`);
    }
  }
  expect(outcomes).toEqual([]);
  // Ending one's own session is open to every role; the last owner cannot leave.
  for (const role of ROLES) {
    const left = await members[role].raw('dashboard.members.leave', undefined);
    expect([role, left.status]).toEqual([role, role === 'owner' ? 409 : 200]);
    if (role === 'owner') expect(left.body.error.data.appCode).toBe('LAST_OWNER');
  }
  expect((await members.owner.raw('account.logout', undefined)).status).toBe(200);
  expect((await members.owner.raw('dashboard.members.list', undefined, { method: 'GET' })).status).toBe(401);
});

test('admins manage admins, auditors and viewers but not owners; owners manage everyone', async () => {
  const members = await team();
  const listed = await members.owner.client.dashboard.members.list.query();
  const idOf = (role: Role) => listed.members.find((m) => m.role === role)?.account_id as string;
  const ownerId = idOf('owner');
  expect(await failure(members.admin.client.dashboard.members.invite.mutate({ email: uniqueEmail('o2'), role: 'owner' }))).toEqual({ status: 403, code: 'INSUFFICIENT_ROLE', message: 'Your role (admin) does not allow you to give the role owner' });
  expect(await failure(members.admin.client.dashboard.members.changeRole.mutate({ account_id: ownerId, role: 'viewer' }))).toMatchObject({ status: 403, code: 'INSUFFICIENT_ROLE' });
  expect(await failure(members.admin.client.dashboard.members.remove.mutate({ account_id: ownerId }))).toMatchObject({ status: 403, code: 'INSUFFICIENT_ROLE' });
  expect(await failure(members.admin.client.dashboard.members.changeRole.mutate({ account_id: idOf('viewer'), role: 'owner' }))).toMatchObject({ status: 403, code: 'INSUFFICIENT_ROLE' });
  await expect(members.admin.client.dashboard.members.changeRole.mutate({ account_id: idOf('viewer'), role: 'auditor' })).resolves.toMatchObject({ role: 'auditor' });
  // The change applies at the member's next request: an auditor may read proofs' consistency, a viewer not.
  expect((await members.viewer.client.account.me.query())?.role).toBe('auditor');
  // Admins create keys, but only owners give one retention:manage (domain/roles.ts `canGrant`); revoking is for owners.
  const created = await members.admin.client.dashboard.keys.create.mutate({ name: 'by admin' });
  expect(await failure(members.admin.client.dashboard.keys.create.mutate({ name: 'dsr', scopes: ['retention:manage'] }))).toEqual({ status: 403, code: 'INSUFFICIENT_ROLE', message: 'Your role (admin) does not allow you to grant the scope retention:manage' });
  await expect(members.owner.client.dashboard.keys.create.mutate({ name: 'dsr', scopes: ['retention:manage'] })).resolves.toMatchObject({ apiKey: { scopes: ['retention:manage'] } });
  expect(await failure(members.admin.client.dashboard.keys.revoke.mutate({ id: created.apiKey.id }))).toMatchObject({ status: 403, code: 'INSUFFICIENT_ROLE' });
  await expect(members.owner.client.dashboard.keys.revoke.mutate({ id: created.apiKey.id })).resolves.toMatchObject({ status: 'revoked' });
});

test('the last owner can be neither demoted nor removed nor leave; with two owners one may go', async () => {
  const members = await team();
  const ownerId = (await members.owner.client.account.me.query())?.account.id as string;
  expect(await failure(members.owner.client.dashboard.members.changeRole.mutate({ account_id: ownerId, role: 'admin' }))).toEqual({ status: 409, code: 'LAST_OWNER', message: 'An organization must keep at least one owner' });
  expect(await failure(members.owner.client.dashboard.members.leave.mutate())).toMatchObject({ status: 409, code: 'LAST_OWNER' });
  const second = await join(members.owner, 'owner');
  const secondId = (await second.client.account.me.query())?.account.id as string;
  // Two owners demoting each other at once: never both (each counts the owners after its own change).
  const both = await Promise.allSettled([
    members.owner.client.dashboard.members.changeRole.mutate({ account_id: secondId, role: 'admin' }),
    second.client.dashboard.members.changeRole.mutate({ account_id: ownerId, role: 'admin' }),
  ]);
  const owners = (await app.collections.members.find({ org_id: members.orgId, role: 'owner' }).toArray()).length;
  expect(owners).toBeGreaterThanOrEqual(1);
  expect(both.filter((r) => r.status === 'fulfilled').length).toBeLessThanOrEqual(1);
  // Make sure both are owners again, then one leaves.
  for (const id of [ownerId, secondId]) await app.collections.members.updateOne({ org_id: members.orgId, account_id: id }, { $set: { role: 'owner' } });
  await expect(second.client.dashboard.members.leave.mutate()).resolves.toEqual({ removed: true });
  expect(await failure(second.client.dashboard.members.list.query())).toMatchObject({ status: 401, code: 'NOT_SIGNED_IN' });
});

test('removing a member ends their sessions at once, on every device', async () => {
  const members = await team();
  const email = (await members.viewer.client.account.me.query())?.account.email as string;
  const laptop = new WebSession(app.url);
  await laptop.login(email, PASSWORD);
  await expect(laptop.client.dashboard.events.list.query({})).resolves.toBeDefined();
  const viewerId = (await members.viewer.client.account.me.query())?.account.id as string;
  await members.admin.client.dashboard.members.remove.mutate({ account_id: viewerId });
  for (const device of [members.viewer, laptop]) expect(await failure(device.client.dashboard.events.list.query({}))).toMatchObject({ status: 401, code: 'NOT_SIGNED_IN' });
  expect(await app.collections.sessions.countDocuments({ account_id: viewerId })).toBe(0);
  // Signing in again: the account belongs to no organization now.
  expect(await failure(new WebSession(app.url).login(email, PASSWORD))).toMatchObject({ status: 403, code: 'NO_ORGANIZATION' });
});

test('invitations: single use (also when two accept at once), bound to their email, expiring, revocable', async () => {
  const owner = new WebSession(app.url);
  await owner.signup(uniqueEmail('inv-owner'), PASSWORD, 'Inviting');
  const email = uniqueEmail('invitee');
  const invitation = await owner.client.dashboard.members.invite.mutate({ email, role: 'viewer' });
  expect(invitation.url).toBe(`/invite/${invitation.token}`);
  const preview = await new WebSession(app.url).client.account.invitation.query({ token: invitation.token });
  expect(preview).toMatchObject({ email, role: 'viewer', account_exists: false, organization: { name: 'Inviting' } });
  const racing = await Promise.allSettled([0, 1].map(() => new WebSession(app.url).client.account.acceptInvitation.mutate({ token: invitation.token, password: PASSWORD })));
  expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  expect(await failure(new WebSession(app.url).client.account.acceptInvitation.mutate({ token: invitation.token, password: PASSWORD }))).toMatchObject({ status: 404, code: 'INVITATION_NOT_FOUND' });
  expect((await owner.client.dashboard.members.list.query()).members.map((m) => m.email)).toContain(email);

  // Bound to its email: someone signed in as another account cannot take it.
  const other = new WebSession(app.url);
  await other.signup(uniqueEmail('other'), PASSWORD, 'Other');
  const second = await owner.client.dashboard.members.invite.mutate({ email: uniqueEmail('second'), role: 'auditor' });
  expect(await failure(other.client.account.acceptInvitation.mutate({ token: second.token }))).toMatchObject({ status: 403, code: 'INVITATION_FOR_OTHER_EMAIL' });
  // Revoked: gone.
  await owner.client.dashboard.members.revokeInvitation.mutate({ id: second.id });
  expect(await failure(new WebSession(app.url).client.account.invitation.query({ token: second.token }))).toMatchObject({ status: 404, code: 'INVITATION_NOT_FOUND' });
  // A malformed link is a 400, never a lookup.
  const malformed = await new WebSession(app.url).raw('account.invitation', { token: 'nope' }, { method: 'GET' });
  expect({ status: malformed.status, message: (malformed.body as { error?: { message?: string } }).error?.message }).toEqual({ status: 400, message: 'Invalid request: token is not a valid invitation link' });
});

test('an invitation expires after 7 days; an existing account joins with its password and switches between its organizations', async () => {
  let now = Date.now();
  const clocked = await startTestApp({ label: 'roles_clock', clock: { now: () => new Date(now) } });
  try {
    const owner = new WebSession(clocked.url);
    await owner.signup(uniqueEmail('clock-owner'), PASSWORD, 'Clocked');
    const late = await owner.client.dashboard.members.invite.mutate({ email: uniqueEmail('late'), role: 'viewer' });
    const existing = new WebSession(clocked.url);
    const existingEmail = uniqueEmail('existing');
    const home = await existing.signup(existingEmail, PASSWORD, 'Home');
    const onTime = await owner.client.dashboard.members.invite.mutate({ email: existingEmail, role: 'auditor' });
    now += 7 * 24 * 3_600_000 - 60_000;
    await owner.client.account.me.query();
    // Signed in as that account: one click. With the wrong password (not signed in): refused.
    expect(await failure(new WebSession(clocked.url).client.account.acceptInvitation.mutate({ token: onTime.token, password: 'wrong password here' }))).toMatchObject({ status: 401, code: 'INVALID_CREDENTIALS' });
    await existing.login(existingEmail, PASSWORD); // a week later: the first session idled out
    const joined = await existing.client.account.acceptInvitation.mutate({ token: onTime.token });
    expect(joined).toMatchObject({ role: 'auditor', organization: { name: 'Clocked' } });
    expect(joined.organizations.map((o) => [o.name, o.role])).toEqual([['Home', 'owner'], ['Clocked', 'auditor']]);
    const back = await existing.client.account.switchOrganization.mutate({ organization_id: home.organization.id });
    expect(back).toMatchObject({ role: 'owner', organization: { name: 'Home' } });
    expect(await failure(existing.client.account.switchOrganization.mutate({ organization_id: 'org_elsewhere' }))).toMatchObject({ status: 404 });
    now += 2 * 60_000;
    expect(await failure(new WebSession(clocked.url).client.account.acceptInvitation.mutate({ token: late.token, password: PASSWORD }))).toEqual({ status: 404, code: 'INVITATION_EXPIRED', message: 'This invitation has expired; ask for a new one' });
  } finally {
    await clocked.close();
  }
});

test('the role table of docs/access.md is ROLE_PERMISSIONS, row for row', () => {
  const readme = readFileSync(path.join(__dirname, '../../docs/access.md'), 'utf8');
  const rows = readme.split('\n').filter((line) => /^\| `[a-zA-Z:]+` \|( ✓ \|| {2}\|){4}/.test(line));
  const table = Object.fromEntries(rows.map((line) => {
    const cells = line.split('|').slice(1, 6).map((c) => c.trim());
    return [cells[0]?.replaceAll('`', ''), ROLES.filter((_, i) => cells[i + 1] === '✓')];
  }));
  expect(table).toEqual(Object.fromEntries(Object.entries(ROLE_PERMISSIONS).map(([permission, roles]) => [permission, ROLES.filter((r) => (roles as readonly Role[]).includes(r))])));
});
