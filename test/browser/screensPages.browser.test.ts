/**
 * The screens an owner and an invited member meet first (issue 36), in a real headless Chromium against
 * the real server and database, at 1280 and at 390 px: the sidebar's badges; Members (the only owner is
 * not offered to leave; removing and revoking ask first); Retention (releasing a hold asks first); the
 * Ledger's checkpoint as a definition list whose hash wraps; the hosted viewer and the Events list worked
 * with the keyboard alone; dates written one way and counts that agree; and a removed member told why on
 * the sign-in page. No page scrolls sideways at 390. Screenshots: test-artifacts/screenshots/pages-*.png.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { DASHBOARD_DIR } from '../../src/http/dashboardAssets';
import { existsSync } from 'node:fs';
import { call, createEvent } from '../helpers/api';
import { artifactPath, launchChromium } from '../helpers/browser';
import { startTestApp, type TestApp } from '../helpers/harness';

jest.setTimeout(180_000);

let app: TestApp;
let browser: Browser;
let owner: BrowserContext;
let page: Page;
const pageProblems: string[] = [];
/** What beforeAll started, closed in reverse order even when it failed halfway. */
const cleanups: (() => Promise<void>)[] = [];
/** Set while the test provokes a refusal that the browser logs as a failed load (the removed member's 401, their sign-in's 403, a policy out of range). */
let expectingRefusal = false;

const OWNER = 'owner@acme.test';
const MEMBER = 'member@acme.test';
const PASSWORD = 'correct horse battery staple';
/** formatDateTime in en-US: "Nov 26, 2026, 02:03:09 PM". */
const DATE_TIME = /^[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{2}:\d{2}:\d{2} [AP]M$/;

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };

const shot = (p: Page, name: string) => p.screenshot({ path: artifactPath('screenshots', `pages-${name}.png`), fullPage: true });

/** The page itself scrolls sideways (wider content than the screen). */
const scrollsSideways = (p: Page) => p.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);

function watch(p: Page, who: string): void {
  p.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    if (expectingRefusal && /status of 40[013]/.test(msg.text())) return;
    pageProblems.push(`${who} console: ${msg.text()}`);
  });
  p.on('pageerror', (error) => pageProblems.push(`${who} pageerror: ${error.message}`));
}

/** Presses Tab until the focused element matches `selector` (at most `limit` times); fails otherwise. */
async function tabTo(p: Page, selector: string, limit = 40): Promise<void> {
  for (let i = 0; i < limit; i++) {
    await p.keyboard.press('Tab');
    if (await p.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return;
  }
  throw new Error(`Tab never reached ${selector}`);
}

const activeInside = (p: Page, selector: string) => p.evaluate((s) => document.activeElement?.closest(s) !== null, selector);

beforeAll(async () => {
  if (!existsSync(`${DASHBOARD_DIR}/index.html`)) throw new Error('The dashboard is not built: `npm test` builds it first; alone, run `npm run build`.');
  app = await startTestApp({ label: 'screens' });
  cleanups.push(() => app.close());
  browser = await launchChromium();
  cleanups.push(() => browser.close());
  owner = await browser.newContext({ viewport: DESKTOP, locale: 'en-US', timezoneId: 'UTC' });
  cleanups.push(() => owner.close());
  page = await owner.newPage();
  watch(page, 'owner');
});

afterAll(async () => {
  for (const close of cleanups.reverse()) await close();
});

describe('the first screens, as an owner and an invited member', () => {
  let orgId = '';
  let apiKey = '';

  it('signs up; the sidebar shows the plan and the role side by side, the same height', async () => {
    await page.goto(`${app.url}/signup`);
    await page.getByLabel('Work email').fill(OWNER);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByLabel('Organization name').fill('Acme Security');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL('**/start');
    const plan = await page.locator('.sidebar .badge.plan').boundingBox();
    const role = await page.getByTestId('my-role').boundingBox();
    expect(plan && role).toBeTruthy();
    if (!plan || !role) return;
    // One row: the same top and the same height, the role to the right of the plan.
    expect(Math.abs(plan.y - role.y)).toBeLessThanOrEqual(1);
    expect(Math.abs(plan.height - role.height)).toBeLessThanOrEqual(1);
    expect(role.x).toBeGreaterThan(plan.x + plan.width);
    await shot(page, '01-sidebar');

    const account = await app.collections.accounts.findOne({ email: OWNER });
    orgId = (await app.collections.members.findOne({ account_id: account?._id ?? '' }))?.org_id ?? '';
    apiKey = (await app.key(orgId)).key;
  });

  it('does not let the only owner leave, and says why', async () => {
    await page.getByRole('link', { name: 'Members' }).click();
    await page.waitForURL('**/members');
    const mine = page.getByTestId(`member-row-${OWNER}`);
    await mine.waitFor();
    expect(await mine.getByRole('button', { name: 'Leave' }).isDisabled()).toBe(true);
    expect(await mine.getByText('You are the only owner: make someone else an owner first.').isVisible()).toBe(true);
    // The reason is the button's description, for a screen reader too.
    expect(await mine.getByRole('button', { name: 'Leave' }).getAttribute('aria-describedby')).toBe('leave-why');
    const joined = (await mine.locator('td[data-label="Joined"]').textContent()) ?? '';
    expect(joined).toMatch(DATE_TIME);
  });

  let inviteLink = '';
  it('invites a member; revoking another invitation asks first (cancel keeps it, confirm revokes it)', async () => {
    const invite = async (email: string) => {
      await page.getByLabel('Email', { exact: true }).fill(email);
      await page.locator('select[name="invite-role"]').selectOption('viewer');
      await page.getByRole('button', { name: 'Create invitation' }).click();
      return page.getByTestId('invitation-link').inputValue();
    };
    inviteLink = await invite(MEMBER);
    expect(inviteLink).toMatch(new RegExp(`^${app.url}/invite/ali_`));
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await invite('temp@acme.test');
    const row = page.getByTestId('invitation-row-temp@acme.test');
    await row.waitFor();
    expect(await row.locator('td[data-label="Expires"]').textContent()).toMatch(DATE_TIME);

    await row.getByRole('button', { name: 'Revoke' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke the invitation for temp@acme.test?' });
    await dialog.waitFor();
    // Focus starts on the harmless choice.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await shot(page, '02-revoke-invitation-confirm');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    // Cancelled: still pending, on the page and on the server.
    await page.reload();
    await page.getByTestId('invitation-row-temp@acme.test').waitFor();
    expect((await app.collections.invitations.countDocuments({ email: 'temp@acme.test' }))).toBe(1);

    await page.getByTestId('invitation-row-temp@acme.test').getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke invitation' }).click();
    await page.getByTestId('invitation-row-temp@acme.test').waitFor({ state: 'detached' });
    expect((await app.collections.invitations.countDocuments({ email: 'temp@acme.test' }))).toBe(0);
    await page.getByTestId(`invitation-row-${MEMBER}`).waitFor();
  });

  it('shows the Members page at 390 px with a full-width email field and nothing wider than the screen', async () => {
    await page.setViewportSize(PHONE);
    await page.reload();
    await page.getByTestId(`member-row-${OWNER}`).waitFor();
    const field = await page.getByLabel('Email', { exact: true }).boundingBox();
    const card = await page.locator('form.invite-form').boundingBox();
    expect(field && card).toBeTruthy();
    if (field && card) expect(field.width).toBeGreaterThanOrEqual(card.width - 2);
    expect(await scrollsSideways(page)).toBe(false);
    await shot(page, '03-members-phone');
    await page.setViewportSize(DESKTOP);
  });

  let member: BrowserContext;
  let theirs: Page;
  it('the member joins by the link and may leave (not the only owner)', async () => {
    member = await browser.newContext({ viewport: DESKTOP, locale: 'en-US', timezoneId: 'UTC' });
    theirs = await member.newPage();
    watch(theirs, 'member');
    await theirs.goto(inviteLink);
    await theirs.getByRole('heading', { name: 'Join Acme Security' }).waitFor();
    await theirs.getByLabel('Choose a password (at least 12 characters)').fill('another long passphrase');
    await theirs.getByRole('button', { name: 'Create account and join' }).click();
    await theirs.waitForURL('**/events');
    await theirs.getByRole('link', { name: 'Members' }).click();
    const mine = theirs.getByTestId(`member-row-${MEMBER}`);
    await mine.waitFor();
    expect(await mine.getByRole('button', { name: 'Leave' }).isEnabled()).toBe(true);
    // Asking first: cancelling keeps them in.
    await mine.getByRole('button', { name: 'Leave' }).click();
    await theirs.getByRole('dialog', { name: 'Leave Acme Security?' }).getByRole('button', { name: 'Cancel' }).click();
    await theirs.getByRole('dialog').waitFor({ state: 'hidden' });
    expect(await theirs.getByTestId('my-role').textContent()).toBe('viewer');
  });

  it('removing the member asks first; the member\'s next click lands on the sign-in page, which says why', async () => {
    await page.reload();
    const row = page.getByTestId(`member-row-${MEMBER}`);
    await row.waitFor();
    await row.getByRole('button', { name: 'Remove' }).click();
    const dialog = page.getByRole('dialog', { name: `Remove ${MEMBER}?` });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    // Cancelled: the button that opened the dialog has the focus back, and the member is still there.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Remove');
    expect(await app.collections.members.countDocuments({ org_id: orgId })).toBe(2);
    await row.getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove member' }).click();
    await row.waitFor({ state: 'detached' });
    expect(await app.collections.members.countDocuments({ org_id: orgId })).toBe(1);

    // The member, still on their page, clicks on.
    expectingRefusal = true;
    await theirs.getByRole('link', { name: 'Events' }).click();
    await theirs.waitForURL('**/login?next=%2Fevents');
    const notice = theirs.getByTestId('session-ended');
    await notice.waitFor();
    expect(await notice.textContent()).toBe(
      'You no longer have access to Acme Security: an owner removed you. Log in to another of your organizations, or ask an owner or admin to invite you again.',
    );
    await shot(theirs, '04-removed-member-login');
    await theirs.setViewportSize(PHONE);
    expect(await scrollsSideways(theirs)).toBe(false);
    await shot(theirs, '05-removed-member-login-phone');
    // Signing in again: the account belongs to no organization now, and the page says that instead.
    await theirs.getByLabel('Email').fill(MEMBER);
    await theirs.getByLabel('Password').fill('another long passphrase');
    await theirs.getByRole('button', { name: 'Log in' }).click();
    await theirs.getByRole('alert').getByText('This account is not a member of any organization. Ask an owner or admin for an invitation.').waitFor();
    expectingRefusal = false;
    await member.close();
  });

  it('releasing a legal hold asks first (cancel keeps it, confirm releases it)', async () => {
    await page.getByRole('link', { name: 'Retention' }).click();
    await page.waitForURL('**/retention');
    const form = page.getByRole('form', { name: 'Place a hold' });
    await form.getByLabel('actor_id').fill('litigant_1');
    await form.getByLabel('Reason').fill('Case 2026-17');
    await page.getByRole('button', { name: 'Place hold' }).click();
    const holds = page.getByTestId('holds-table');
    await holds.getByText('actor_id = litigant_1').waitFor();
    expect(await holds.locator('td[data-label="Placed"]').textContent()).toMatch(/^[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{2}:\d{2}:\d{2} [AP]M by owner@acme\.test$/);

    await holds.getByRole('button', { name: 'Release' }).click();
    const dialog = page.getByRole('dialog', { name: 'Release this legal hold?' });
    await dialog.getByText('The hold for “Case 2026-17” ends').waitFor();
    await shot(page, '06-release-hold-confirm');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.reload();
    await page.getByTestId('holds-table').getByText('actor_id = litigant_1').waitFor();

    await page.getByTestId('holds-table').getByRole('button', { name: 'Release' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Release hold' }).click();
    await page.getByTestId('retention-holds').getByText('None: pruning and erasure apply to every event.').waitFor();
    // The policy reads as a sentence, with its count agreeing.
    await page.getByLabel('Keep events for (days)').fill('1');
    expectingRefusal = true;
    await page.getByRole('button', { name: 'Change policy' }).click();
    await page.getByRole('form', { name: 'Change the policy' }).getByRole('alert').waitFor();
    expectingRefusal = false;
    expect(await scrollsSideways(page)).toBe(false);
    await shot(page, '07-retention');
  });

  let eventId = '';
  it('the Ledger page shows the checkpoint as a definition list, and its root hash wraps at 390 px', async () => {
    eventId = (await createEvent(app.url, apiKey, { actor: { id: 'solo', name: 'Solo Sam' } })).id as string;
    await page.getByRole('link', { name: 'Ledger' }).click();
    await page.waitForURL('**/ledger');
    const stored = await app.collections.events.countDocuments({ tenant: orgId });
    await page.getByTestId('ledger-size').getByText(String(stored), { exact: true }).waitFor();
    const card = page.getByTestId('ledger-checkpoint');
    expect(await card.locator('dl.checkpoint-details dt').allTextContents()).toEqual(['Log', 'Events in the log', 'Root hash', 'Signed', 'Signatures']);
    expect(await card.locator('dt:text-is("Signed") + dd').textContent()).toMatch(DATE_TIME);
    expect(await card.locator('dt:text-is("Log") + dd').textContent()).toBe(`ledger.test/${orgId}`);
    expect(await card.locator('dt:text-is("Signatures") + dd').textContent()).toBe('ledger.test');
    expect(await page.getByTestId('ledger-root-hash').textContent()).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    await shot(page, '08-ledger');

    await page.setViewportSize(PHONE);
    await page.reload();
    await page.getByTestId('ledger-root-hash').waitFor();
    expect(await scrollsSideways(page)).toBe(false);
    // The hash itself fits the card (wrapped), rather than being clipped.
    const hash = await page.getByTestId('ledger-root-hash').boundingBox();
    const box = await card.boundingBox();
    if (hash && box) expect(hash.x + hash.width).toBeLessThanOrEqual(box.x + box.width);
    await shot(page, '09-ledger-phone');
  });

  it('no page of these scrolls sideways at 390 px', async () => {
    for (const path of ['/members', '/retention', '/ledger', '/events', `/events/${eventId}`, '/usage']) {
      await page.goto(`${app.url}${path}`);
      await page.locator('main h1').first().waitFor();
      await page.waitForLoadState('networkidle');
      expect({ path, sideways: await scrollsSideways(page) }).toEqual({ path, sideways: false });
    }
    await shot(page, '10-event-detail-phone');
    await page.setViewportSize(DESKTOP);
  });

  it('the Events list: each row is reached with Tab and opened with Enter; counts agree ("1 event")', async () => {
    await page.goto(`${app.url}/events?actor_id=solo`);
    await page.getByTestId('event-row').first().waitFor();
    await page.getByText('1 event shown').waitFor();
    await page.locator('main').focus();
    await tabTo(page, '[data-testid="event-row"] a.row-link');
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/events/${eventId}?actor_id=solo`);
  });

  it('the hosted viewer: rows reached with Tab, opened with Enter or Space, focus moves to the event and back to its row', async () => {
    for (const customer of ['cust_a', 'cust_b', 'cust_a']) await createEvent(app.url, apiKey, { organization_id: customer, actor: { id: `${customer}_admin` } });
    const minted = await call(`${app.url}/v1/viewer-tokens`, { key: apiKey, body: { organization_id: 'cust_a' } });
    expect(minted.status).toBe(201);
    const viewer = await owner.newPage();
    watch(viewer, 'viewer');
    try {
      await viewer.goto(`${app.url}${minted.body.viewer_path as string}`);
      await viewer.getByTestId('viewer-scope').waitFor();
      const buttons = viewer.getByTestId('viewer-events').locator('tbody tr button.row-button');
      await buttons.nth(1).waitFor();
      expect(await buttons.count()).toBe(2);
      // Dates in the viewer are written as in the dashboard.
      expect(await buttons.first().textContent()).toMatch(DATE_TIME);

      await tabTo(viewer, 'button.row-button');
      expect(await viewer.evaluate(() => document.activeElement?.getAttribute('aria-expanded'))).toBe('false');
      await viewer.keyboard.press('Enter');
      const opened = viewer.getByTestId('viewer-event');
      await opened.waitFor();
      // Focus moved into the opened event, and it is on screen.
      expect(await activeInside(viewer, '[data-testid="viewer-event"]')).toBe(true);
      expect(await opened.evaluate((el) => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.top < window.innerHeight; })).toBe(true);
      await viewer.getByTestId('viewer-proof-verified').waitFor({ timeout: 15_000 });
      await shot(viewer, '11-viewer-opened');

      // Escape: closed, and the focus is back on the row it came from.
      await viewer.keyboard.press('Escape');
      await opened.waitFor({ state: 'detached' });
      expect(await viewer.evaluate(() => document.activeElement?.classList.contains('row-button'))).toBe(true);
      expect(await buttons.first().evaluate((el) => el === document.activeElement)).toBe(true);

      // The next row, with Space; then "Back to the list", from the keyboard too.
      await viewer.keyboard.press('Tab');
      expect(await buttons.nth(1).evaluate((el) => el === document.activeElement)).toBe(true);
      await viewer.keyboard.press('Space');
      await opened.waitFor();
      expect(await activeInside(viewer, '[data-testid="viewer-event"]')).toBe(true);
      await tabTo(viewer, '[data-testid="viewer-event"] button', 5);
      expect(await viewer.evaluate(() => document.activeElement?.textContent)).toBe('Back to the list');
      await viewer.keyboard.press('Enter');
      await opened.waitFor({ state: 'detached' });
      expect(await buttons.nth(1).evaluate((el) => el === document.activeElement)).toBe(true);

      await viewer.setViewportSize(PHONE);
      await buttons.first().click();
      await opened.waitFor();
      await viewer.getByTestId('viewer-proof-verified').waitFor({ timeout: 15_000 });
      expect(await scrollsSideways(viewer)).toBe(false);
      await shot(viewer, '12-viewer-phone');
    } finally {
      await viewer.close();
    }
  });

  it('ran without console errors or uncaught exceptions', () => {
    expect(pageProblems).toEqual([]);
  });
});
