/**
 * A session that a membership change ended is refused like any other (401 NOT_SIGNED_IN, "Not signed
 * in"), and on /trpc its error data says why, so that the dashboard's sign-in page can tell the person:
 * removed (by whom, by role) or left, and from which organization. Other ends (logout, an unknown
 * cookie) say nothing more. What remains of an ended session names no account.
 */
import type { Collection } from 'mongodb';
import { TRPCClientError } from '@trpc/client';
import { hashSessionToken } from '../../src/domain/account';
import { startTestApp, type TestApp } from '../helpers/harness';
import { uniqueEmail, WebSession } from '../helpers/webSession';

const PASSWORD = 'correct horse battery staple';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ label: 'sessionEnded' });
});
afterAll(() => app.close());

/** What a refused call's error carries: status, code, message and the session's end, if any. */
async function refusal(promise: Promise<unknown>): Promise<{ status?: number; code?: string; message: string; sessionEnded?: unknown }> {
  try {
    await promise;
  } catch (error) {
    if (!(error instanceof TRPCClientError)) throw error;
    const data = error.data as { httpStatus?: number; appCode?: string; sessionEnded?: unknown };
    return { status: data.httpStatus, code: data.appCode, message: error.message, ...('sessionEnded' in data ? { sessionEnded: data.sessionEnded } : {}) };
  }
  throw new Error('expected the call to fail, but it succeeded');
}

async function orgWithViewer(name: string) {
  const owner = new WebSession(app.url);
  await owner.signup(uniqueEmail('owner'), PASSWORD, name);
  const email = uniqueEmail('viewer');
  const invitation = await owner.client.dashboard.members.invite.mutate({ email, role: 'viewer' });
  const viewer = new WebSession(app.url);
  const view = await viewer.client.account.acceptInvitation.mutate({ token: invitation.token, password: PASSWORD });
  return { owner, viewer, email, viewerId: view.account.id };
}

test('removed: every device of the member is told who removed them (by role) and from which organization', async () => {
  const { owner, viewer, email, viewerId } = await orgWithViewer('Acme Security');
  const laptop = new WebSession(app.url);
  await laptop.login(email, PASSWORD);
  await owner.client.dashboard.members.remove.mutate({ account_id: viewerId });
  for (const device of [viewer, laptop]) {
    expect(await refusal(device.client.dashboard.events.list.query({}))).toEqual({
      status: 401,
      code: 'NOT_SIGNED_IN',
      message: 'Not signed in',
      sessionEnded: { reason: 'removed', organization: 'Acme Security', by_role: 'owner' },
    });
  }
  // What is kept names no account: only the organization, why and when, until the session would have expired.
  expect(await app.collections.sessions.countDocuments({ account_id: viewerId })).toBe(0);
  // "Who am I" stays null (the dashboard's first question), as for any ended session.
  expect(await viewer.client.account.me.query()).toBeNull();
});

test('left: the member\'s other devices are told they left', async () => {
  const { viewer, email } = await orgWithViewer('Leavers');
  const phone = new WebSession(app.url);
  await phone.login(email, PASSWORD);
  await viewer.client.dashboard.members.leave.mutate();
  expect((await refusal(phone.client.dashboard.usage.query())).sessionEnded).toEqual({ reason: 'left', organization: 'Leavers', by_role: 'viewer' });
});

test('other ends of a session say nothing more than "Not signed in"', async () => {
  const { viewer } = await orgWithViewer('Quiet');
  await viewer.client.account.logout.mutate();
  expect(await refusal(viewer.client.dashboard.events.list.query({}))).toEqual({ status: 401, code: 'NOT_SIGNED_IN', message: 'Not signed in' });
  expect(await refusal(new WebSession(app.url).client.dashboard.events.list.query({}))).toEqual({ status: 401, code: 'NOT_SIGNED_IN', message: 'Not signed in' });
});

test('a row written behind the service\'s back tells nothing: a live session beside `ended`, or an `ended` of another shape', async () => {
  const { viewer } = await orgWithViewer('Alice Org');
  const bravo = new WebSession(app.url);
  await bravo.signup(uniqueEmail('bravo'), PASSWORD, 'Bravo Org');
  const hash = hashSessionToken(decodeURIComponent((viewer.cookie ?? '').split('=')[1] ?? ''));
  const sessions = app.collections.sessions as unknown as Collection<{ _id: string } & Record<string, unknown>>;
  const live = await sessions.findOne({ _id: hash });
  expect(live).not.toBeNull();
  const otherOrg = (await bravo.client.account.me.query())?.organization.id;
  const end = { reason: 'removed', org_id: otherOrg, by_role: 'owner', at: new Date() };
  const shapes: Record<string, unknown>[] = [
    // The live session's fields kept beside an end naming another organization: refused, and told nothing false.
    { ...live, ended: end },
    { _id: hash, ended: 'garbage', expires_at: live?.expires_at },
    { _id: hash, ended: { ...end, reason: 'pwned', by_role: 'root' }, expires_at: live?.expires_at },
    { _id: hash, ended: { ...end, org_id: { a: 1 } }, expires_at: live?.expires_at },
  ];
  for (const shape of shapes) {
    await sessions.replaceOne({ _id: hash }, shape);
    expect(await refusal(viewer.client.dashboard.events.list.query({}))).toEqual({ status: 401, code: 'NOT_SIGNED_IN', message: 'Not signed in' });
  }
});
