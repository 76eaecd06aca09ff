/**
 * The Keys, Streams and Getting started screens as an owner and as an invited viewer, at 1280 px and at
 * 390 px, in a real headless Chromium against the real server and database: the key form says why it
 * cannot create yet; a stream whose receiver refuses shows failing from the first refused attempt, its
 * failed attempts in the chart's legend, and "Retry now" delivers once the receiver accepts (a Retry-After
 * of ten minutes means nothing else would); a successful Test on a failing stream retries it; a viewer
 * who opens /keys or /streams is told who manages them, with no form and no refused request.
 * Screenshots go to test-artifacts/screenshots/screens-*.png.
 */
import { existsSync } from 'node:fs';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { DASHBOARD_DIR } from '../../src/http/dashboardAssets';
import { call, eventBody } from '../helpers/api';
import { artifactPath, eventuallyIs, launchChromium } from '../helpers/browser';
import { startTestApp, type TestApp } from '../helpers/harness';
import { type Receiver, webhookItems, webhookReceiver } from '../helpers/streamReceivers';

jest.setTimeout(180_000);

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const ownerEmail = 'owner@northwind.test';
const viewerEmail = 'viewer@northwind.test';
const password = 'correct horse battery staple';

let app: TestApp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let receiver: Receiver;
let secret = '';
let apiKey = '';
let inviteLink = '';
/** Console errors and uncaught exceptions of the owner's page: a working page has none. */
const pageProblems: string[] = [];
const cleanups: (() => Promise<void>)[] = [];


/** These pages wait on stream deliveries too: a longer deadline than the helper's. */
const eventually = <T>(check: () => Promise<T>, expected: T) => eventuallyIs(check, expected, 15_000);

const shot = (on: Page, name: string) => on.screenshot({ path: artifactPath('screenshots', `screens-${name}.png`), fullPage: true });

/** The same screen at both widths, back at the desktop width after. */
async function shots(on: Page, name: string): Promise<void> {
  await on.setViewportSize(DESKTOP);
  await shot(on, `${name}-1280`);
  await on.setViewportSize(PHONE);
  await shot(on, `${name}-390`);
  await on.setViewportSize(DESKTOP);
}

/** Whether `locator` lies wholly inside the page's width (nothing to scroll sideways to reach it). */
async function insideWidth(on: Page, locator: Locator): Promise<boolean> {
  const box = await locator.boundingBox();
  const width = on.viewportSize()?.width ?? 0;
  return box !== null && box.x >= 0 && box.x + box.width <= width;
}

const stateOf = (row: Locator) => async () => (await row.getByTestId('stream-state').textContent()) ?? '';

beforeAll(async () => {
  if (!existsSync(`${DASHBOARD_DIR}/index.html`)) throw new Error('The dashboard is not built: `npm test` builds it first; alone, run `npm run build`.');
  app = await startTestApp({ label: 'screens' });
  cleanups.push(() => app.close());
  receiver = await webhookReceiver(() => secret).start();
  cleanups.push(() => receiver.stop());
  browser = await launchChromium();
  cleanups.push(() => browser.close());
  context = await browser.newContext({ viewport: DESKTOP, locale: 'en-US', timezoneId: 'UTC' });
  cleanups.push(() => context.close());
  page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() === 'error') pageProblems.push(`console: ${msg.text()}`);
  });
  page.on('pageerror', (error) => pageProblems.push(`pageerror: ${error.message}`));
});

afterAll(async () => {
  for (const close of cleanups.reverse()) await close();
});

describe('an owner', () => {
  it('signs up and is offered a first key on getting started', async () => {
    await page.goto(`${app.url}/signup`);
    await page.getByLabel('Work email').fill(ownerEmail);
    await page.getByLabel('Password').fill(password);
    await page.getByLabel('Organization name').fill('Northwind');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL('**/start');
    await page.getByRole('link', { name: 'Create your first key' }).waitFor();
    await shots(page, 'start-owner');
  });

  it('keys: a tidy form that says why it cannot create yet, full width on a phone', async () => {
    await page.getByRole('link', { name: 'Create your first key' }).click();
    await page.waitForURL('**/keys');
    const create = page.getByRole('button', { name: 'Create key' });
    // Not greyed out: pressed without a name, it says what is missing.
    expect(await create.isDisabled()).toBe(false);
    await create.click();
    await page.getByRole('alert').filter({ hasText: 'Give the key a name first' }).waitFor();
    await shots(page, 'keys-form-unnamed');
    // Every scope unticked: the same, for the scopes.
    await page.getByLabel('Name').fill('billing-service');
    for (const scope of ['events:write', 'events:read', 'ledger:read']) await page.getByRole('checkbox', { name: scope }).uncheck();
    await create.click();
    await page.getByRole('alert').filter({ hasText: 'Choose at least one scope' }).waitFor();
    for (const scope of ['events:write', 'events:read', 'ledger:read']) await page.getByRole('checkbox', { name: scope }).check();

    // At 390 px the name field takes the card's width, and each checkbox sits beside its own label.
    await page.setViewportSize(PHONE);
    const name = await page.getByLabel('Name').boundingBox();
    expect(name?.width ?? 0).toBeGreaterThan(300);
    for (const scope of ['events:write', 'retention:manage']) {
      const box = await page.getByRole('checkbox', { name: scope }).boundingBox();
      const label = await page.locator('.checkbox-option', { hasText: scope }).boundingBox();
      expect(box && label && box.y >= label.y && box.y + box.height <= label.y + label.height + 1).toBe(true);
    }
    await page.setViewportSize(DESKTOP);

    await create.click();
    const value = page.getByTestId('new-key-value');
    await value.waitFor();
    apiKey = await value.inputValue();
    expect(apiKey).toMatch(/^alk_/);
    await shots(page, 'keys-created');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    // Revoking asks first.
    await page.getByTestId('key-row-billing-service').getByRole('button', { name: 'Revoke' }).waitFor();
  });

  it('streams: failing from the first refused delivery, failed attempts in the legend, and "Retry now" delivers', async () => {
    for (let i = 0; i < 3; i++) expect((await call(`${app.url}/v1/events`, { key: apiKey, body: eventBody({ actor: { id: `user_${i}` } }) })).status).toBe(201);
    // Refuses everything, asking for ten minutes' peace: only "Retry now" can make the stream try again in this test's time.
    receiver.mode = { kind: 'status', status: 503, retryAfter: '600' };
    await page.getByRole('link', { name: 'Streams' }).click();
    await page.waitForURL('**/streams');
    await page.getByLabel('Name').fill('SIEM');
    await page.getByLabel('URL').fill(`${receiver.url}/hook`);
    await page.getByLabel('Start at sequence number').fill('1');
    await page.getByRole('button', { name: 'Create stream' }).click();
    const secretField = page.getByTestId('stream-secret');
    await secretField.waitFor();
    secret = await secretField.inputValue();
    await page.getByRole('button', { name: 'I have stored it' }).click();
    const row = page.getByTestId('stream-row-SIEM');
    await row.waitFor();

    // Failing at once (not after the ten-minute limit), retrying, with the receiver's answer and the failed attempts counted.
    await eventually(stateOf(row), 'failing');
    await eventually(() => Promise.resolve(receiver.refused.length > 0), true);
    const failure = row.getByTestId('stream-failure');
    await failure.getByText(/^Retrying: next attempt in \d+ minutes?$/).waitFor();
    await failure.getByText(/Last error at .*: .*503/).waitFor();
    await eventually(async () => /[1-9]\d* failed attempts?$/.test((await row.getByTestId('stream-history-legend').textContent()) ?? ''), true);
    await shots(page, 'streams-failing');
    // At 1280 px the table needs no sideways scrolling inside its card either.
    expect(await page.locator('.table-wrap').evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);

    // At 390 px every action is on screen, Delete included, and the table stays inside its card.
    await page.setViewportSize(PHONE);
    for (const name of ['Retry now', 'Test', 'Pause', 'Delete']) expect(await insideWidth(page, row.getByRole('button', { name, exact: true }))).toBe(true);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await page.setViewportSize(DESKTOP);

    // The receiver accepts again: "Retry now" sends now instead of in ten minutes.
    const before = webhookItems(receiver).length;
    receiver.mode = { kind: 'ok' };
    await row.getByRole('button', { name: 'Retry now' }).click();
    await eventually(stateOf(row), 'active');
    expect(webhookItems(receiver).length).toBeGreaterThan(before);
    await eventually(async () => (await row.getByTestId('stream-lag').textContent())?.startsWith('0 events') ?? false, true);
    // Recovered: no stale error, no retry line.
    expect(await row.getByTestId('stream-failure').count()).toBe(0);
    expect(await row.getByText(/Last error/).count()).toBe(0);
    expect(await row.getByText('Retrying now').count()).toBe(0);
    await shots(page, 'streams-recovered');
  });

  it('streams: a successful Test on a failing stream retries it, and the delivery decides', async () => {
    const row = page.getByTestId('stream-row-SIEM');
    receiver.mode = { kind: 'status', status: 503, retryAfter: '600' };
    expect((await call(`${app.url}/v1/events`, { key: apiKey, body: eventBody({ actor: { id: 'user_late' } }) })).status).toBe(201);
    await eventually(stateOf(row), 'failing');
    // Refused, a test says so and changes nothing.
    await row.getByRole('button', { name: 'Test', exact: true }).click();
    await eventually(async () => ((await row.getByTestId('stream-test-result').textContent()) ?? '').startsWith('Test delivery failed: '), true);
    expect(await stateOf(row)()).toBe('failing');
    receiver.mode = { kind: 'ok' };
    await row.getByRole('button', { name: 'Test', exact: true }).click();
    await eventually(async () => (await row.getByTestId('stream-test-result').textContent()) ?? '', 'Test delivery acknowledged (HTTP 200). Retrying the stream now: its next delivery decides whether it is active again.');
    await eventually(stateOf(row), 'active');
    await shots(page, 'streams-tested');
  });

  it('invites a viewer', async () => {
    await page.getByRole('link', { name: 'Members' }).click();
    await page.waitForURL('**/members');
    await page.getByLabel('Email', { exact: true }).fill(viewerEmail);
    await page.locator('select[name="invite-role"]').selectOption('viewer');
    await page.getByRole('button', { name: 'Create invitation' }).click();
    inviteLink = await page.getByTestId('invitation-link').inputValue();
    expect(inviteLink).toMatch(/\/invite\/ali_/);
  });
});

describe('an invited viewer', () => {
  let theirs: BrowserContext;
  let viewer: Page;
  /** What the viewer's browser logged as an error: a refused request (403) among them. */
  const problems: string[] = [];
  /** Every dashboard call the server refused. */
  const refused: string[] = [];

  beforeAll(async () => {
    theirs = await browser.newContext({ viewport: DESKTOP, locale: 'en-US', timezoneId: 'UTC' });
    viewer = await theirs.newPage();
    viewer.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(msg.text());
    });
    viewer.on('response', (res) => {
      if (res.status() === 403) refused.push(res.url());
    });
    await viewer.goto(inviteLink);
    await viewer.getByLabel('Choose a password (at least 12 characters)').fill('another long passphrase');
    await viewer.getByRole('button', { name: 'Create account and join' }).click();
    await viewer.waitForURL('**/events');
  });
  afterAll(() => theirs.close());

  it('opens /keys and /streams and is told who manages them, with no form and no refused request', async () => {
    for (const [path, name, title] of [['keys', 'keys', 'API keys'], ['streams', 'streams', 'Streams']] as const) {
      await viewer.goto(`${app.url}/${path}`);
      await viewer.getByRole('heading', { name: title, level: 1 }).waitFor();
      const gate = viewer.getByTestId('not-for-role');
      await gate.getByText('owners and admins. Your role is viewer: ask one of them', { exact: false }).waitFor();
      // The owner, named and mailable.
      await gate.getByRole('link', { name: ownerEmail }).waitFor();
      expect(await viewer.getByLabel('Name').count()).toBe(0);
      expect(await viewer.getByText('Something went wrong').count()).toBe(0);
      await shots(viewer, `${name}-viewer`);
    }
    expect(refused).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('getting started offers the events and the ledger, not a key', async () => {
    await viewer.goto(`${app.url}/start`);
    await viewer.getByRole('heading', { name: 'Getting started' }).waitFor();
    await viewer.getByRole('link', { name: 'Open the events explorer' }).waitFor();
    await viewer.getByRole('link', { name: 'Open the ledger' }).waitFor();
    expect(await viewer.getByRole('link', { name: 'Create your first key' }).count()).toBe(0);
    await shots(viewer, 'start-viewer');
    expect(refused).toEqual([]);
  });

  it('sees retention and members without forms that would be refused', async () => {
    await viewer.goto(`${app.url}/retention`);
    await viewer.getByRole('heading', { name: 'Retention', level: 1 }).waitFor();
    expect(await viewer.getByRole('form').count()).toBe(0);
    await shots(viewer, 'retention-viewer');
    await viewer.goto(`${app.url}/members`);
    await viewer.getByTestId('members-table').getByText(ownerEmail).waitFor();
    expect(await viewer.getByRole('button', { name: 'Create invitation' }).count()).toBe(0);
    await shots(viewer, 'members-viewer');
    expect(refused).toEqual([]);
    expect(problems).toEqual([]);
  });
});

describe('the owner, after', () => {
  it('deletes the stream after confirming, reachable at 390 px', async () => {
    await page.getByRole('link', { name: 'Streams' }).click();
    await page.waitForURL('**/streams');
    await page.setViewportSize(PHONE);
    const row = page.getByTestId('stream-row-SIEM');
    await row.getByRole('button', { name: 'Delete', exact: true }).click();
    const confirm = row.getByRole('button', { name: 'Delete for good' });
    await confirm.waitFor();
    expect(await insideWidth(page, confirm)).toBe(true);
    await shot(page, 'streams-delete-confirm-390');
    await confirm.click();
    await page.getByText('No streams yet').waitFor();
    await page.setViewportSize(DESKTOP);
    expect(pageProblems).toEqual([]);
  });
});
