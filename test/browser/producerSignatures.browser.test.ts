/**
 * Producer signatures in a real headless Chromium against the real server and database: an owner binds
 * a key to a producer's Ed25519 key on the Keys page (a bad key text and a key that has sent events
 * refused with the server's words); an event the producer signed, sent with that key, shows on its
 * detail page as signed by that producer key, the binding entry's inclusion proven in this browser; and
 * an unsigned event of the bound key that the service's own write path stored (what code holding the
 * service's key and database could do) shows the failure once it is in a signed checkpoint.
 * Screenshots go to test-artifacts/screenshots/producer-*.png.
 */
import { existsSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { contentOf } from '../../src/domain/eventFields';
import { DASHBOARD_DIR } from '../../src/http/dashboardAssets';
import { PRODUCER_MESSAGES } from '../../src/services/producerKeys';
import { call, eventBody } from '../helpers/api';
import { artifactPath, launchChromium } from '../helpers/browser';
import { startTestApp, type TestApp } from '../helpers/harness';
import { producerSigner, signedBody, storedPastTheDoor } from '../helpers/producer';

jest.setTimeout(180_000);

const password = 'correct horse battery staple';
const producer = producerSigner('billing.producer.test');

let app: TestApp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let orgId = '';
let apiKey = '';
let keyId = '';
/** Console errors and uncaught exceptions of the page: a working page has none but the refusals provoked. */
const pageProblems: string[] = [];
/** Set while the test provokes refusals (a bad key, a used key), which the browser logs as failed loads. */
let expecting: RegExp | null = null;
const cleanups: (() => Promise<void>)[] = [];

const shot = (name: string) => page.screenshot({ path: artifactPath('screenshots', `producer-${name}.png`), fullPage: true });

/** Creates a key on the Keys page and returns its value, shown once. */
async function createKey(name: string): Promise<string> {
  await page.getByLabel('Name').fill(name);
  await page.getByRole('button', { name: 'Create key' }).click();
  const value = page.getByTestId('new-key-value');
  await value.waitFor();
  const key = await value.inputValue();
  await page.getByRole('button', { name: 'I have stored it' }).click();
  await page.getByTestId(`key-row-${name}`).waitFor();
  return key;
}

/** Opens the Bind dialog of a key's row, pastes `text` and submits. */
async function bind(name: string, text: string): Promise<void> {
  await page.getByTestId(`key-row-${name}`).getByRole('button', { name: 'Bind producer key' }).click();
  await page.getByLabel('Producer verifier key').fill(text);
  await page.getByRole('button', { name: 'Bind key' }).click();
}

beforeAll(async () => {
  if (!existsSync(`${DASHBOARD_DIR}/index.html`)) throw new Error('The dashboard is not built: `npm test` builds it first; alone, run `npm run build`.');
  app = await startTestApp({ label: 'producerweb' });
  cleanups.push(() => app.close());
  browser = await launchChromium();
  cleanups.push(() => browser.close());
  context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US', timezoneId: 'UTC' });
  cleanups.push(() => context.close());
  page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    if (expecting?.test(msg.text())) return;
    pageProblems.push(`console: ${msg.text()}`);
  });
  page.on('pageerror', (error) => pageProblems.push(`pageerror: ${error.message}`));
});

afterAll(async () => {
  for (const close of cleanups.reverse()) await close();
});

it('an owner binds a key to a producer key on the Keys page; the server\'s refusals are shown', async () => {
  await page.goto(`${app.url}/signup`);
  await page.getByLabel('Work email').fill('owner@signed.test');
  await page.getByLabel('Password').fill(password);
  await page.getByLabel('Organization name').fill('Signed Co');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL('**/start');
  orgId = (await page.evaluate(async () => (await (await fetch('/trpc/account.me')).json()) as { result: { data: { organization: { id: string } } } })).result.data.organization.id;
  expect(orgId).not.toBe('');

  await page.goto(`${app.url}/keys`);
  apiKey = await createKey('billing-service');
  const used = await createKey('already-used');
  expect((await call(`${app.url}/v1/events`, { key: used, body: eventBody() })).status).toBe(201);
  const row = page.getByTestId('key-row-billing-service');
  expect(await row.getByTestId('key-producer').textContent()).toBe('unsigned');

  expecting = /status of (400|409)/;
  await bind('billing-service', 'not a verifier key');
  const dialog = page.getByRole('dialog');
  await dialog.getByTestId('bind-explained').getByText(/every event .* sends must be signed by the producer .* bind it before the key's first event/).waitFor();
  await dialog.getByRole('alert').getByText(/^Producer key must be an Ed25519 verifier key/).waitFor();
  await shot('bind-refused');
  await dialog.getByRole('button', { name: 'Cancel' }).click();

  // A key that has sent an event cannot be bound: the 409's message.
  await bind('already-used', producer.text);
  await page.getByRole('dialog').getByRole('alert').getByText(PRODUCER_MESSAGES.conflict, { exact: false }).waitFor();
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
  expecting = null;

  await bind('billing-service', producer.text);
  await row.getByTestId('key-producer').getByText(producer.text, { exact: true }).waitFor();
  // Bound: no second binding offered.
  expect(await row.getByRole('button', { name: 'Bind producer key' }).count()).toBe(0);
  expect(await page.getByTestId('key-row-already-used').getByTestId('key-producer').textContent()).toBe('unsigned');
  // Nor to a key that has sent events, once the page knows it (read afresh).
  await page.reload();
  await page.getByTestId('key-row-already-used').getByTestId('key-producer').getByText('unsigned').waitFor();
  expect(await page.getByTestId('key-row-already-used').getByRole('button', { name: 'Bind producer key' }).count()).toBe(0);
  expect(await page.getByTestId('key-row-billing-service').getByRole('button', { name: 'Bind producer key' }).count()).toBe(0);
  await shot('keys-bound');
});

it('a signed event of the bound key shows as signed by the producer key, verified in this browser', async () => {
  const created = await call(`${app.url}/v1/events`, { key: apiKey, body: signedBody(eventBody({ actor: { id: 'user_signed' } }), orgId, producer) });
  expect(created.status).toBe(201);
  keyId = created.body.event.api_key_id;
  // Its checkpoint is signed within an interval or two: the card asks again meanwhile.
  expecting = /status of 404/;
  await page.goto(`${app.url}/events/${created.body.event.id}`);
  await page.getByTestId('event-proof-verified').waitFor();
  const signed = page.getByTestId('event-producer-signed');
  await signed.getByText(`Signed by producer key ${producer.text}`, { exact: false }).waitFor();
  await signed.getByText(new RegExp(`API key ${keyId} is bound to that key per the log's entry at sequence number \\d+`)).waitFor();
  expect(await page.getByTestId('event-producer-failed').count()).toBe(0);
  await page.getByText('producer_signature', { exact: true }).waitFor();
  expecting = null;
  await shot('event-signed');
});

it('an unsigned event of the bound key, stored past the service\'s door, fails once it is in a signed checkpoint', async () => {
  const content = contentOf(eventBody({ actor: { id: 'forged' }, action: 'payout.approved' }), orgId);
  const id = await storedPastTheDoor(app, orgId, keyId, content);
  expecting = /status of 404/;
  await page.goto(`${app.url}/events/${id}`);
  // The event's own inclusion checks out: it is in the signed log; its producer signature is what is missing.
  await page.getByTestId('event-proof-verified').waitFor();
  const failed = page.getByTestId('event-producer-failed');
  await failed.getByText('This event\'s producer signature does not check out.').waitFor();
  await failed.getByText(`event ${id} of API key ${keyId}, bound to producer key ${producer.text}, carries no producer signature`).waitFor();
  expect(await page.getByTestId('event-producer-signed').count()).toBe(0);
  expecting = null;
  await shot('event-unsigned-failed');
  expect(pageProblems).toEqual([]);
});
