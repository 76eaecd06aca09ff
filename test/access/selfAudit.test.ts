/**
 * The service audits itself: changes to an organization (members, invitations, keys, streams, exports,
 * failed sign-ins) are events in that organization's own log, with the acting member, key or viewer as
 * actor, counted against no cap, and verifiable like every other event (exported with proofs and
 * checked offline by `verify`). Invitations are mailed through SMTP when SMTP_URL is set (a real SMTP
 * server on loopback, from the smtp-server package, receives them here).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { sealOutbox } from '../../src/db/rowMacs';
import { RowMac } from '../../src/domain/ledger/rowMac';
import { SELF_AUDIT_ACTIONS } from '../../src/domain/selfAudit';
import { call, createEvent, eventually, sentEvents } from '../helpers/api';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp } from '../helpers/harness';
import { runCli, testLedgerKeyFile } from '../helpers/processes';
import { webhookReceiver } from '../helpers/streamReceivers';
import { failure, uniqueEmail, WebSession } from '../helpers/webSession';

const PASSWORD = 'correct horse battery staple';

let app: TestApp;
let smtp: SMTPServer;
const mails: { to: string; text: string }[] = [];
beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, done) {
      let text = '';
      stream.on('data', (chunk: Buffer) => { text += chunk.toString(); });
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address).join(','), text });
        done();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const port = (smtp.server.address() as AddressInfo).port;
  app = await startTestApp({ label: 'selfaudit', env: { SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'ledger@example.com', PUBLIC_URL: 'https://ledger.example.com' } });
});
afterAll(async () => {
  await app.close();
  await new Promise<void>((resolve) => smtp.close(resolve));
});

test('every change to an organization is on its own record, with who made it, and the record verifies offline', async () => {
  const owner = new WebSession(app.url);
  const ownerEmail = uniqueEmail('audited');
  const me = await owner.signup(ownerEmail, PASSWORD, 'Audited');
  const orgId = me.organization.id;
  const ownerId = me.account.id;

  const { key, apiKey } = await owner.client.dashboard.keys.create.mutate({ name: 'ingest', scopes: ['events:write', 'events:read', 'ledger:read'] });
  await createEvent(app.url, key);
  const inviteeEmail = uniqueEmail('invitee');
  const invitation = await owner.client.dashboard.members.invite.mutate({ email: inviteeEmail, role: 'viewer' });
  // With PUBLIC_URL and SMTP_URL set: a full link, mailed.
  expect(invitation.url).toBe(`https://ledger.example.com/invite/${invitation.token}`);
  const mail = await eventually('the invitation mail', () => Promise.resolve(mails.find((m) => m.to === inviteeEmail)));
  // The body as sent: quoted-printable (soft line breaks, =XX escapes) undone.
  const body = mail.text.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  expect(body).toContain(invitation.url);
  expect(body).toContain('Subject: You are invited to Audited on Audit Ledger');
  const invitee = new WebSession(app.url);
  const joined = await invitee.client.account.acceptInvitation.mutate({ token: invitation.token, password: PASSWORD });
  await owner.client.dashboard.members.changeRole.mutate({ account_id: joined.account.id, role: 'auditor' });
  const dropped = await owner.client.dashboard.members.invite.mutate({ email: uniqueEmail('dropped'), role: 'admin' });
  await owner.client.dashboard.members.revokeInvitation.mutate({ id: dropped.id });
  await owner.client.dashboard.members.remove.mutate({ account_id: joined.account.id });

  const receiver = await webhookReceiver(() => '').start();
  try {
    const stream = await call(`${app.url}/v1/streams`, { key, body: { name: 'siem', destination: { type: 'webhook', url: `${receiver.url}/hook` } } });
    expect(stream.status).toBe(201);
    await owner.client.dashboard.streams.pause.mutate({ id: stream.body.id });
    await owner.client.dashboard.streams.resume.mutate({ id: stream.body.id });
    await owner.client.dashboard.streams.remove.mutate({ id: stream.body.id });
  } finally {
    await receiver.stop();
  }
  expect((await call(`${app.url}/v1/events/export?format=csv&action=user.role_changed`, { key })).status).toBe(200);
  expect(await failure(new WebSession(app.url).login(ownerEmail, 'not the password at all'))).toMatchObject({ status: 401 });
  await owner.client.dashboard.keys.revoke.mutate({ id: apiKey.id });

  const owned = await app.collections.events.find({ tenant: orgId }).sort({ seq: 1 }).toArray();
  const record = owned.filter((e) => e.action.startsWith('audit_ledger.')).map((e) => [e.action, e.actor_id, e.resource_type]);
  expect(record).toEqual([
    ['audit_ledger.key.created', ownerId, 'api_key'],
    ['audit_ledger.member.invited', ownerId, 'invitation'],
    ['audit_ledger.member.joined', joined.account.id, 'member'],
    ['audit_ledger.member.role_changed', ownerId, 'member'],
    ['audit_ledger.member.invited', ownerId, 'invitation'],
    ['audit_ledger.invitation.revoked', ownerId, 'invitation'],
    ['audit_ledger.member.removed', ownerId, 'member'],
    ['audit_ledger.stream.created', apiKey.id, 'stream'],
    ['audit_ledger.stream.paused', ownerId, 'stream'],
    ['audit_ledger.stream.resumed', ownerId, 'stream'],
    ['audit_ledger.stream.deleted', ownerId, 'stream'],
    ['audit_ledger.export.run', apiKey.id, 'export'],
    ['audit_ledger.signin.failed', 'anonymous', 'account'],
    ['audit_ledger.key.revoked', ownerId, 'api_key'],
  ]);
  for (const [action] of record) expect(Object.keys(SELF_AUDIT_ACTIONS)).toContain(action);
  const roleChange = owned.find((e) => e.action === 'audit_ledger.member.role_changed');
  expect(JSON.parse(roleChange?.metadata ?? '{}')).toEqual({ actor_type: 'member', role: 'owner', from: 'viewer', to: 'auditor' });
  expect(owned.find((e) => e.action === 'audit_ledger.signin.failed')?.actor_email).toBe(ownerEmail);
  // The sequence stays gapless with the records among the events.
  expect(owned.map((e) => e.seq)).toEqual(owned.map((_, i) => i + 1));

  // Verifiable like the rest: exported with proofs by a read-only key, checked offline.
  const reader = await app.services.stores.apiKeys.forOrg(orgId).create('auditor', new Date(), ['events:read', 'ledger:read']);
  await eventually('a checkpoint of the whole record', async () => (await call(`${app.url}/v1/ledger/checkpoint`, { key: reader.key })).body.tree_size >= owned.length);
  const dir = mkdtempSync(join(tmpdir(), 'selfaudit-'));
  try {
    const out = join(dir, 'export.json');
    expect((await runCli(['export', '--url', app.url, '--key', reader.key, '--out', out, '--with-proofs'], {})).code).toBe(0);
    const verifierKey = (await call(`${app.url}/v1/ledger/key`, { key: reader.key })).body.verifier_key as string;
    const verified = await runCli(['verify', '--verifier-key', verifierKey, '--events', out, '--proofs', `${out}.proofs.json`, '--state', join(dir, 'state'), '--json'], {});
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, events: owned.length });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the records count against no cap: at its cap an organization still records exports, and they take no place from its events', async () => {
  const org = await app.org({ monthlyCap: 2 });
  for (let i = 0; i < 3; i++) expect((await call(`${app.url}/v1/events/export`, { key: org.key })).status).toBe(200);
  expect((await call(`${app.url}/v1/events`, { key: org.key, body: { actor: { id: 'a' }, action: 'x.y', resource: { type: 't', id: '1' } } })).status).toBe(201);
  expect((await call(`${app.url}/v1/events`, { key: org.key, body: { actor: { id: 'a' }, action: 'x.y', resource: { type: 't', id: '2' } } })).status).toBe(201);
  expect((await call(`${app.url}/v1/events`, { key: org.key, body: { actor: { id: 'a' }, action: 'x.y', resource: { type: 't', id: '3' } } })).status).toBe(429);
  expect((await call(`${app.url}/v1/events/export`, { key: org.key })).status).toBe(200);
  const all = (await call(`${app.url}/v1/events?limit=100`, { key: org.key })).body.data as { action: string }[];
  expect(sentEvents(all)).toHaveLength(2);
  expect(all.filter((e) => e.action === 'audit_ledger.export.run')).toHaveLength(4);
});

test('the admin CLI\'s changes reach the organization\'s record through the outbox a running instance drains', async () => {
  const env = { MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName, LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile() };
  const org = JSON.parse((await runCli(['org', 'create', '--name', 'Operated', '--json'], env)).stdout) as { id: string };
  const created = JSON.parse((await runCli(['key', 'create', '--org', org.id, '--name', 'ops', '--scopes', 'events:read', '--json'], env)).stdout) as { id: string };
  expect((await runCli(['key', 'revoke', created.id], env)).code).toBe(0);
  const records = await eventually('the CLI\'s records in the log', async () => {
    const docs = await app.collections.events.find({ tenant: org.id }).sort({ seq: 1 }).toArray();
    return docs.length >= 3 && docs;
  });
  expect(records.map((e) => [e.seq, e.action, e.actor_id, e.resource_id])).toEqual([
    [1, 'audit_ledger.organization.created', 'operator', org.id],
    [2, 'audit_ledger.key.created', 'operator', created.id],
    [3, 'audit_ledger.key.revoked', 'operator', created.id],
  ]);
  // Each is removed from the outbox just after it is stored.
  await eventually('the outbox emptied', async () => (await app.collections.auditOutbox.countDocuments({})) === 0);
  // Signed like every event: the organization's log has a checkpoint of all three.
  const reader = await app.key(org.id);
  await eventually('a checkpoint of the three', async () => (await call(`${app.url}/v1/ledger/checkpoint`, { key: reader.key })).body.tree_size === 3);
  // Drained twice (two instances at once, or a crash before the removal): stored once.
  const again = records[2];
  await app.collections.auditOutbox.insertOne(sealOutbox(RowMac.fromSigner(TEST_LEDGER_SIGNER), { _id: again?._id ?? '', tenant: org.id, actor: { type: 'operator' }, action: 'audit_ledger.key.revoked', resource: { type: 'api_key', id: created.id }, metadata: {}, at: new Date() }));
  await app.services.selfAudit.drainOutbox();
  expect(await app.collections.events.countDocuments({ tenant: org.id })).toBe(3);
  expect(await app.collections.auditOutbox.countDocuments({})).toBe(0);
  // Drained as the CLI's own (sealed with the key file's row key), not moved aside as foreign.
  expect(app.services.selfAudit.stats.outboxForeign).toBe(0);
});

test('docs/access.md lists every self-audit action with its description', () => {
  const readme = readFileSync(join(__dirname, '../../docs/access.md'), 'utf8');
  for (const [action, description] of Object.entries(SELF_AUDIT_ACTIONS)) expect(readme).toContain(`| \`${action}\` | ${description} |`);
});
