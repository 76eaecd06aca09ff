/**
 * The dashboard end to end, in a real headless Chromium against the real server and database:
 * sign up, create a key, send events with it over REST, find one by actor and by date range, open
 * its diff and its ledger proof verified in the browser, export CSV and check the file, see the ledger
 * and a rewritten log said loudly, revoke the key and see the API refuse it, log out.
 * Screenshots of each main page go to test-artifacts/screenshots.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { storageKey } from '../../src/dashboard/lib/ledgerTrust';
import { checkpointText } from '../../src/domain/ledger/formats';
import { signNote } from '../../src/domain/ledger/note';
import { cosignerFromSeed } from '../../src/domain/ledger/cosigner';
import { parsePolicy } from '../../src/domain/ledger/witnessFormats';
import { DASHBOARD_DIR } from '../../src/http/dashboardAssets';
import { call, createEvent, eventBody, SPEC_CSV_COLUMNS } from '../helpers/api';
import { artifactPath, eventuallyIs as eventually, launchChromium } from '../helpers/browser';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp } from '../helpers/harness';
import { startWitnessProcess } from '../helpers/processes';
import { webhookItems, webhookReceiver } from '../helpers/streamReceivers';

jest.setTimeout(180_000);

let app: TestApp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Console errors and uncaught exceptions, CSP violations included: a working page has none. */
const pageProblems: string[] = [];
/** What beforeAll started, to close in reverse order even when it failed halfway. */
const cleanups: (() => Promise<void>)[] = [];
/** Set while the test itself provokes a 401 (a wrong password), which the browser logs as a failed load. */
let expecting401 = false;


const shot = (name: string) => page.screenshot({ path: artifactPath('screenshots', `${name}.png`), fullPage: true });

beforeAll(async () => {
  if (!existsSync(`${DASHBOARD_DIR}/index.html`)) throw new Error('The dashboard is not built: `npm test` builds it first; alone, run `npm run build`.');
  // A witness that cosigns, and one that cannot be reached: the Ledger page shows both.
  const witnessDir = mkdtempSync(join(tmpdir(), 'browser-witness-'));
  const witness = await startWitnessProcess(witnessDir, 'witness.acme.test', `log ledger.test/installation ${TEST_LEDGER_SIGNER.text}\n`);
  cleanups.push(async () => { await witness.stop(); rmSync(witnessDir, { recursive: true, force: true }); });
  const offline = cosignerFromSeed('witness.offline.test', randomBytes(32)).text;
  app = await startTestApp({ label: 'browser', witnessPolicy: parsePolicy(`witness acme ${witness.vkey} ${witness.url}\nwitness offline ${offline} http://127.0.0.1:9\nquorum acme\n`) });
  cleanups.push(() => app.close());
  browser = await launchChromium();
  cleanups.push(() => browser.close());
  context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true, locale: 'en-US', timezoneId: 'UTC' });
  cleanups.push(() => context.close());
  page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    if (expecting401 && /status of 401/.test(msg.text())) return;
    pageProblems.push(`console: ${msg.text()}`);
  });
  page.on('pageerror', (error) => pageProblems.push(`pageerror: ${error.message}`));
});

afterAll(async () => {
  for (const close of cleanups.reverse()) await close();
});

// Each run has a database of its own, so a fixed address is unique; it reads well in the screenshots.
const email = 'security.lead@acme.test';
const password = 'correct horse battery staple';
let apiKey = '';
const DAY = 86_400_000;

describe('the dashboard in a browser', () => {
  it('signs up and lands on getting started with a curl example for this server', async () => {
    await page.goto(`${app.url}/`);
    await page.waitForURL('**/login?next=%2F');
    await shot('01-login');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByLabel('Work email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByLabel('Organization name').fill('Acme Security');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL('**/start');
    await page.getByRole('heading', { name: 'Getting started' }).waitFor();
    const example = (await page.getByLabel('curl example').textContent()) ?? '';
    expect(example).toContain(`curl -X POST ${app.url}/v1/events`);
    expect(example).toContain('Authorization: Bearer $AUDIT_LEDGER_API_KEY');
    expect(await page.locator('.org-name').textContent()).toBe('Acme Security');
    await shot('02-getting-started');

    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'al_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
  });

  it('creates an API key, shown once with a warning and a copy button', async () => {
    await page.getByRole('link', { name: 'Create your first key' }).click();
    await page.waitForURL('**/keys');
    await page.getByLabel('Name').fill('billing-service');
    await page.getByRole('button', { name: 'Create key' }).click();
    const value = page.getByTestId('new-key-value');
    await value.waitFor();
    apiKey = await value.inputValue();
    expect(apiKey).toMatch(/^alk_[A-Za-z0-9_-]{43}$/);
    await page.getByText('This is the only time it is shown').waitFor();
    await page.getByRole('button', { name: 'Copy', exact: true }).waitFor();
    await shot('03-key-created');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await expect(page.getByTestId('new-key-value').count()).resolves.toBe(0);
    const row = page.getByTestId('key-row-billing-service');
    expect(await row.textContent()).toContain(`${apiKey.slice(0, 8)}…${apiKey.slice(-4)}`);
    expect(await row.textContent()).toContain('Active');
  });

  it('shows events sent with that key over the REST API, newest first', async () => {
    const now = Date.now();
    await createEvent(app.url, apiKey, {
      timestamp: new Date(now - 10 * DAY).toISOString(),
      actor: { id: 'alice', name: 'Alice Admin' },
      action: 'user.role_changed',
      resource: { type: 'user', id: 'user_bob', name: 'Bob' },
      metadata: { field: 'role', old_value: 'viewer', new_value: 'editor' },
    });
    await createEvent(app.url, apiKey, {
      timestamp: new Date(now - 3 * DAY).toISOString(),
      actor: { id: 'alice', name: 'Alice Admin', email: 'alice@acme.test' },
      action: 'user.role_changed',
      resource: { type: 'user', id: 'user_carol', name: 'Carol' },
      metadata: { field: 'role', old_value: 'viewer', new_value: 'admin', ip: '203.0.113.9' },
    });
    await createEvent(app.url, apiKey, {
      timestamp: new Date(now - 3600_000).toISOString(),
      actor: { id: 'bob' },
      action: 'invoice.created',
      resource: { type: 'invoice', id: 'inv_42' },
      metadata: { amount: 1200, currency: 'EUR' },
    });
    await createEvent(app.url, apiKey, { actor: { id: 'dave' }, action: 'project.archived', resource: { type: 'project', id: 'prj_7', name: 'Apollo' } });

    await page.getByRole('link', { name: 'Events' }).click();
    await page.waitForURL('**/events');
    const rows = page.getByTestId('event-row');
    await rows.first().waitFor();
    // The four events and, between them by time, the organization's own record of the key's creation.
    expect(await rows.count()).toBe(5);
    expect(await rows.first().textContent()).toContain('project.archived');
    expect(await rows.last().textContent()).toContain('user_bob');
    await shot('04-events');
  });

  it('finds one event by filtering by actor and by date range, kept in the URL across a reload', async () => {
    await page.getByLabel('Actor ID').fill('alice');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/actor_id=alice/);
    const rows = page.getByTestId('event-row');
    await eventually(() => rows.count(), 2);

    await page.getByLabel('Date range').selectOption('7d');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/range=7d/);
    await eventually(() => rows.count(), 1);
    expect(await rows.first().textContent()).toContain('Carol');

    await page.reload();
    await rows.first().waitFor();
    expect(await rows.count()).toBe(1);
    expect(await page.getByLabel('Actor ID').inputValue()).toBe('alice');
    expect(await page.getByLabel('Date range').inputValue()).toBe('7d');

    // A custom range picks the older event instead.
    await page.getByLabel('Date range').selectOption('custom');
    const local = (ms: number) => new Date(ms).toISOString().slice(0, 16); // the context runs in UTC
    await page.getByLabel('From', { exact: true }).fill(local(Date.now() - 12 * DAY));
    await page.getByLabel('To', { exact: true }).fill(local(Date.now() - 8 * DAY));
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/range=custom/);
    await eventually(async () => (await rows.count()) === 1 && ((await rows.first().textContent()) ?? '').includes('Bob'), true);

    await page.getByLabel('Date range').selectOption('7d');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await eventually(async () => (await rows.count()) === 1 && ((await rows.first().textContent()) ?? '').includes('Carol'), true);
    await shot('05-events-filtered');
  });

  it('opens the event with the keyboard and shows every field, the metadata and the highlighted diff', async () => {
    await page.locator('a.row-link').first().focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/events\/[0-9a-f-]{36}\?/);
    const before = page.getByTestId('diff-before');
    const after = page.getByTestId('diff-after');
    await before.waitFor();
    expect(await before.locator('del').allTextContents()).toEqual(['viewer']);
    expect(await after.locator('ins').allTextContents()).toEqual(['admin']);
    const metadata = JSON.parse((await page.getByTestId('metadata-json').textContent()) ?? '');
    expect(metadata).toEqual({ field: 'role', old_value: 'viewer', new_value: 'admin', ip: '203.0.113.9' });
    for (const text of ['actor_email', 'alice@acme.test', 'resource_name', 'Carol', 'api_key_id']) await page.getByText(text, { exact: true }).first().waitFor();
    // The ledger card: verified here, in Chromium's WebCrypto, against the key this browser now pins.
    await page.getByTestId('event-checkpoint').getByText(/^Sequence number \d, included in checkpoint 5$/).waitFor();
    // The organization's own record (its first key's) took number 1: the card says why this is not 1.
    await page.getByTestId('event-seq-note').getByText(/^Numbers 1 to \d went to this organization's earlier entries/).waitFor();
    await page.getByTestId('event-proof-verified').waitFor();
    await page.getByTestId('ledger-trust').getByText(/^First checkpoint this browser verified/).waitFor();
    await shot('06-event-detail');

    await page.getByRole('link', { name: '← Back to events' }).click();
    await page.waitForURL(/\/events\?.*actor_id=alice/);
  });

  it('exports the current filter as a CSV download with the spec\'s columns', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-csv').click()]);
    const file = artifactPath('downloads', download.suggestedFilename());
    await download.saveAs(file);
    expect(download.suggestedFilename()).toMatch(/\.csv$/);
    const rows: string[][] = parse(readFileSync(file, 'utf8'));
    expect(rows[0]).toEqual(SPEC_CSV_COLUMNS);
    expect(rows).toHaveLength(2);
    const record = Object.fromEntries(SPEC_CSV_COLUMNS.map((column, i) => [column, rows[1]?.[i]]));
    expect(record).toMatchObject({ actor_id: 'alice', actor_name: 'Alice Admin', resource_id: 'user_carol', action: 'user.role_changed' });
  });

  it('shows usage against the free plan\'s cap and the events-per-day chart', async () => {
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.waitForURL('**/usage');
    await page.getByText('of 10,000 events this month').waitFor();
    expect(await page.locator('.usage-numbers strong').textContent()).toBe('4');
    // The chart counts every event received, the records of the key's creation and the CSV export too (they count against no cap).
    await page.getByRole('img', { name: /Events per day, last 30 days: 6 in all/ }).waitFor();
    await shot('07-usage');

    // An operator lowers the cap (CLI or plan change): 4 of 5 is the 80% warning.
    const accountId = (await app.collections.accounts.findOne({ email }))?._id ?? '';
    const orgId = (await app.collections.members.findOne({ account_id: accountId }))?.org_id ?? '';
    await app.collections.orgs.updateOne({ _id: orgId }, { $set: { monthly_cap: 5 } });
    await page.reload();
    await page.getByTestId('usage-warning').getByText('You have used 80% of this month').waitFor();
    await shot('07b-usage-warning');
    await createEvent(app.url, apiKey);
    await page.reload();
    await page.getByTestId('usage-exhausted').getByText('Monthly limit reached.').waitFor();
    await shot('07c-usage-exhausted');
    await app.collections.orgs.updateOne({ _id: orgId }, { $set: { monthly_cap: null } });
  });

  it('shows the ledger: the newest checkpoint, the verifier key to pin, and how to verify an export', async () => {
    await page.getByRole('link', { name: 'Ledger' }).click();
    await page.waitForURL('**/ledger');
    // Every event stored (the usage step added one; the key's creation and the exports are on record); the page polls until the checkpoint covers them.
    const owner = (await app.collections.accounts.findOne({ email }))?._id ?? '';
    const tenant = (await app.collections.members.findOne({ account_id: owner }))?.org_id ?? '';
    const stored = await app.collections.events.countDocuments({ tenant });
    await page.getByTestId('ledger-size').getByText(String(stored), { exact: true }).waitFor();
    const key = await call(`${app.url}/v1/ledger/key`, { key: apiKey });
    expect(await page.getByTestId('verifier-key').textContent()).toBe(key.body.verifier_key);
    await page.getByText('npx audit-ledger verify --verifier-key').waitFor();
    // The event detail left checkpoint 4 in this browser's memory; the newest extends it, proven here.
    await page.getByTestId('ledger-trust').getByText('Extends the checkpoint of 5 events this browser verified before: proven, nothing rewritten.').waitFor();
    // The witnesses: the cosignatures on the installation checkpoint that includes this one, checked here.
    await page.getByTestId('witness-verdict').getByText(/^Checked in this browser: the newest checkpoint is in installation checkpoint \d+, cosigned by acme \(quorum met\)\.$/).waitFor();
    expect(await page.getByTestId('witness-table').textContent()).toContain('unreachable');
    await shot('07d-ledger');
    // An alarm (a witness holding another history) is shown in red, until an operator clears it.
    await app.collections.ledgerWitnesses.updateOne({ name: 'offline' }, { $set: { alarm: 'the witness cosigned a tree of 9 entries, and this log has 4' } });
    await page.reload();
    await page.getByTestId('witness-alarm').getByText('ALARM: the witness cosigned a tree of 9 entries, and this log has 4').waitFor();
    await app.collections.ledgerWitnesses.updateOne({ name: 'offline' }, { $set: { alarm: null } });

    // Had the server shown this browser another history before (a checkpoint of 3 events with another
    // root, signed with the real key), the newest checkpoint cannot be proven to extend it: said loudly.
    const accountId = (await app.collections.accounts.findOne({ email }))?._id ?? '';
    const orgId = (await app.collections.members.findOne({ account_id: accountId }))?.org_id ?? '';
    const fork = signNote(checkpointText({ origin: `ledger.test/${orgId}`, size: 3, root: randomBytes(32) }), TEST_LEDGER_SIGNER);
    await page.evaluate(([name, value]: [string, string]) => localStorage.setItem(name, value), [storageKey(orgId), JSON.stringify({ verifier_key: key.body.verifier_key, note: fork, verified_at: new Date().toISOString() })] as [string, string]);
    await page.reload();
    await page.getByRole('alert').getByText('The ledger was rewritten.').waitFor();
    expect(await page.getByTestId('ledger-rewritten').textContent()).toContain(`the checkpoint of ${stored} events and the one of 3 verified here before are not the same log`);
    await shot('07e-ledger-rewritten');
    await page.evaluate((name) => localStorage.removeItem(name), storageKey(orgId));
    await page.reload();
    await page.getByTestId('ledger-trust').getByText(/^First checkpoint this browser verified/).waitFor();
  });

  it('streams: creates a webhook stream (secret shown once), sees it deliver, tests, pauses, resumes, deletes', async () => {
    let secret = '';
    const receiver = await webhookReceiver(() => secret).start();
    try {
      await page.getByRole('link', { name: 'Streams' }).click();
      await page.waitForURL('**/streams');
      await page.getByText('No streams yet').waitFor();
      await page.getByLabel('Name').fill('SIEM');
      await page.getByLabel('URL').fill(`${receiver.url}/hook`);
      await page.getByLabel('Start at sequence number').fill('1');
      await page.getByRole('button', { name: 'Create stream' }).click();
      const secretField = page.getByTestId('stream-secret');
      await secretField.waitFor();
      secret = await secretField.inputValue();
      expect(secret).toMatch(/^whsec_/);
      const row = page.getByTestId('stream-row-SIEM');
      await row.waitFor();
      // Every event so far reaches the receiver, signed (checked with the standardwebhooks library), and the row shows it.
      const count = (await call(`${app.url}/v1/events?limit=100`, { key: apiKey })).body.data.length as number;
      await eventually(() => Promise.resolve(webhookItems(receiver).length >= count), true, 20_000);
      await eventually(async () => (await row.getByTestId('stream-lag').textContent())?.startsWith('0 events') ?? false, true, 10_000);
      expect(await row.getByTestId('stream-state').textContent()).toBe('active');
      await shot('11-streams');
      await page.getByRole('button', { name: 'I have stored it' }).click();
      await row.getByRole('button', { name: 'Test' }).click();
      await eventually(async () => (await row.getByTestId('stream-test-result').textContent()) ?? '', 'Test delivery acknowledged (HTTP 200).');
      await row.getByRole('button', { name: 'Pause' }).click();
      await eventually(async () => (await row.getByTestId('stream-state').textContent()) ?? '', 'paused');
      await row.getByRole('button', { name: 'Resume' }).click();
      await eventually(async () => (await row.getByTestId('stream-state').textContent()) ?? '', 'active');
      await row.getByRole('button', { name: 'Delete' }).click();
      await row.getByRole('button', { name: 'Delete for good' }).click();
      await page.getByText('No streams yet').waitFor();
    } finally {
      await receiver.stop();
    }
  });

  it('retention: an owner sets a policy (pending until its notice ends), holds, erases an actor, and the entries check out in the browser', async () => {
    for (let i = 0; i < 3; i++) expect((await call(`${app.url}/v1/events`, { key: apiKey, body: eventBody({ actor: { id: 'erase_me', name: 'Erin Erasable' } }) })).status).toBe(201);
    await page.getByRole('link', { name: 'Retention' }).click();
    await page.waitForURL('**/retention');
    await page.getByTestId('retention-days').getByText('Events are kept for ever').waitFor();
    await page.getByLabel('Keep events for (days)').fill('90');
    await page.getByRole('button', { name: 'Change policy' }).click();
    await page.getByTestId('retention-pending').getByText(/^90 days, in force from /).waitFor();
    await page.getByRole('form', { name: 'Place a hold' }).getByLabel('actor_id').fill('litigant_1');
    await page.getByRole('form', { name: 'Place a hold' }).getByLabel('Reason').fill('Case 2026-17');
    await page.getByRole('button', { name: 'Place hold' }).click();
    await page.getByTestId('retention-holds').getByText('actor_id = litigant_1').waitFor();
    await page.getByLabel('Actor ID').fill('erase_me');
    await page.getByLabel('I understand this cannot be undone').check();
    await page.getByRole('button', { name: 'Erase', exact: true }).click();
    await page.getByTestId('erase-result').getByText('Erased 3 events.').waitFor();
    await page.getByTestId('retention-removed').getByText(/0 pruned, 3 erased on request/).waitFor();
    // Every retention entry fetched, proven against the pinned key and checked against the policy here.
    await page.getByRole('button', { name: 'Check in this browser' }).click();
    await page.getByTestId('retention-verdict').getByText('3 entries, each proven in the signed log; they account for 0 pruned and 3 erased events, each under the policy in force.').waitFor();
    await shot('08b-retention');
    // The events explorer says what went, instead of silently showing fewer rows.
    await page.getByRole('link', { name: 'Events' }).click();
    await page.getByTestId('events-removed').getByText(/3 events were erased on request\./).waitFor();
  });

  it('revokes the key after confirmation, and the API refuses it at once', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('button', { name: 'Revoke' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke “billing-service”?' });
    await dialog.waitFor();
    await shot('08-revoke-confirm');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByTestId('key-row-billing-service').getByText('Revoked').waitFor();
    await shot('09-keys-revoked');

    const refused = await call(`${app.url}/v1/events`, { key: apiKey, body: { actor: { id: 'x' }, action: 'a.b', resource: { type: 't', id: '1' } } });
    expect(refused.status).toBe(401);
    expect(refused.body.message).toBe('Invalid API key');
  });

  it('is readable at phone width', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${app.url}/events?actor_id=alice`);
    await page.getByTestId('event-row').first().waitFor();
    // Nothing wider than the screen: no sideways scrolling of the page itself.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot('10-events-phone');
    await page.goto(`${app.url}/usage`);
    await page.getByText('of 10,000 events this month').waitFor();
    // The five events sent above and the three the retention step sent (erased since: the cap counts what was received).
    expect(await page.locator('.usage-numbers strong').textContent()).toBe('8');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot('11-usage-phone');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('invites a viewer who joins by the link, cannot create a key, and the hosted viewer shows only one customer\'s events', async () => {
    await page.getByRole('link', { name: 'Members' }).click();
    await page.waitForURL('**/members');
    const viewerEmail = 'customer.success@acme.test';
    await page.getByLabel('Email', { exact: true }).fill(viewerEmail);
    await page.locator('select[name="invite-role"]').selectOption('viewer');
    await page.getByRole('button', { name: 'Create invitation' }).click();
    const link = await page.getByTestId('invitation-link').inputValue();
    expect(link).toMatch(new RegExp(`^${app.url}/invite/ali_`));
    await shot('12-members-invitation');

    // The invitee, in a browser of their own.
    const theirs = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US', timezoneId: 'UTC' });
    try {
      const invitee = await theirs.newPage();
      const refusals: string[] = [];
      invitee.on('console', (msg) => {
        // The key page is not offered to a viewer, so no request is refused: any console error is a problem.
        if (msg.type() === 'error') refusals.push(msg.text());
      });
      await invitee.goto(link);
      await invitee.getByRole('heading', { name: 'Join Acme Security' }).waitFor();
      await invitee.getByLabel('Choose a password (at least 12 characters)').fill('another long passphrase');
      await invitee.getByRole('button', { name: 'Create account and join' }).click();
      await invitee.waitForURL('**/events');
      expect(await invitee.getByTestId('my-role').textContent()).toBe('viewer');
      // No key management for a viewer: not in the navigation, and opened directly the page says who manages keys instead of offering a form.
      expect(await invitee.getByRole('link', { name: 'API keys' }).count()).toBe(0);
      await invitee.goto(`${app.url}/keys`);
      await invitee.getByTestId('not-for-role').getByText('Your role is viewer').waitFor();
      await invitee.getByTestId('not-for-role').getByRole('link', { name: email }).waitFor();
      expect(await invitee.getByRole('button', { name: 'Create key' }).count()).toBe(0);
      expect(refusals).toEqual([]);
    } finally {
      await theirs.close();
    }
    await page.reload();
    await page.getByTestId('members-table').getByText(viewerEmail).waitFor();

    // The hosted viewer, embedded by the application in its own page, for its customer cust_a.
    const account = await app.collections.accounts.findOne({ email });
    const member = await app.collections.members.findOne({ account_id: account?._id ?? '' });
    const orgId = member?.org_id ?? '';
    const minter = await app.key(orgId);
    let newest = '';
    for (const customer of ['cust_a', 'cust_b', 'cust_a']) newest = (await createEvent(app.url, minter.key, { organization_id: customer, actor: { id: `${customer}_admin` } })).id as string;
    // Signed into a checkpoint before the viewer asks for its proof.
    await eventually(async () => (await call(`${app.url}/v1/events/${newest}/proof`, { key: minter.key })).status, 200);
    const minted = await call(`${app.url}/v1/viewer-tokens`, { key: minter.key, body: { organization_id: 'cust_a' } });
    expect(minted.status).toBe(201);
    // The application's own site, on another origin, frames the viewer.
    const portal = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><title>Portal</title><h1>Acme customer portal</h1><iframe title="audit" src="${app.url}${minted.body.viewer_path as string}" width="1200" height="700"></iframe>`);
    });
    portal.listen(0, 'localhost');
    await once(portal, 'listening');
    const host = await context.newPage();
    host.on('console', (msg) => { if (msg.type() === 'error') pageProblems.push(`viewer: ${msg.text()}`); });
    host.on('pageerror', (error) => pageProblems.push(`viewer pageerror: ${error.message}`));
    try {
      await host.goto(`http://localhost:${(portal.address() as AddressInfo).port}/`);
      const frame = host.frameLocator('iframe[title="audit"]');
      await frame.getByTestId('viewer-scope').waitFor();
      const rows = frame.getByTestId('viewer-events').locator('tbody tr');
      await eventually(() => rows.count(), 2);
      expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-organization-id')))).toEqual(['cust_a', 'cust_a']);
      await rows.first().click();
      await frame.getByTestId('viewer-proof-verified').waitFor({ timeout: 15_000 });
      await host.screenshot({ path: artifactPath('screenshots', '13-viewer-embedded.png'), fullPage: true });
    } finally {
      await host.close();
      portal.close();
    }
  });

  it('logs out: back to the sign-in page, and the dashboard needs signing in again', async () => {
    await page.goto(`${app.url}/events`);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL('**/login');
    expect((await context.cookies()).find((c) => c.name === 'al_session')).toBeUndefined();
    await page.goto(`${app.url}/keys`);
    await page.waitForURL('**/login?next=%2Fkeys');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('not the password');
    expecting401 = true;
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByText('Invalid email or password').waitFor();
    expecting401 = false;
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL('**/keys');
  });

  it('ran without console errors or uncaught exceptions (CSP violations included)', () => {
    expect(pageProblems).toEqual([]);
  });
});
