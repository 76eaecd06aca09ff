/**
 * Trust at rest, for the admin CLI's self-audit outbox: whoever can write the database but cannot read
 * the signing key file must not get a record written into an organization's log as the service's own
 * (`api_key_id` `audit_ledger`). The CLI seals each record with the row key derived from the key file;
 * a running instance writes only sealed records of the kinds the CLI makes, and names, counts and moves
 * aside everything else.
 */
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import type { AuditOutboxDoc } from '../../src/db/documents';
import { AuditOutbox } from '../../src/db/auditOutbox';
import { sealOutbox } from '../../src/db/rowMacs';
import { signerFromSeed } from '../../src/domain/ledger/note';
import { RowMac } from '../../src/domain/ledger/rowMac';
import { SelfAudit } from '../../src/services/selfAudit';
import { createLogger } from '../../src/logger';
import { call, eventBody, eventually } from '../helpers/api';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp } from '../helpers/harness';
import { runCli, testLedgerKeyFile } from '../helpers/processes';

let app: TestApp;
const logs: string[] = [];
let env: Record<string, string>;
beforeAll(async () => {
  app = await startTestApp({ label: 'outbox_at_rest', logTo: { write: (line: string) => { logs.push(line); } } });
  env = { MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: app.dbName, LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile() };
});
afterAll(() => app.close());

const ROW_MAC = RowMac.fromSigner(TEST_LEDGER_SIGNER);

/** The error lines naming a foreign outbox record. */
function foreignLines(): { id: string; action: string }[] {
  return logs.map((line) => JSON.parse(line) as { level: number; kind?: string; id: string; action: string; msg: string })
    .filter((entry) => entry.level === 50 && entry.kind === 'outbox' && entry.msg.startsWith('FOREIGN'));
}

test('a CLI command\'s record reaches the log as the service\'s own; without the key file each recording command refuses before changing anything', async () => {
  const org = JSON.parse((await runCli(['org', 'create', '--name', 'Sealed Co', '--json'], env)).stdout) as { id: string };
  const [record] = await eventually('the CLI\'s record in the log', async () => {
    const docs = await app.collections.events.find({ tenant: org.id }).toArray();
    return docs.length >= 1 && docs;
  });
  expect([record?.action, record?.actor_id, record?.api_key_id, record?.resource_id]).toEqual(['audit_ledger.organization.created', 'operator', 'audit_ledger', org.id]);

  const keyless = { ...env, LEDGER_SIGNING_KEY_FILE: join(tmpdir(), `no-such-key-${randomBytes(4).toString('hex')}`) };
  const existing = await app.key(org.id);
  const refusals = [
    await runCli(['org', 'create', '--name', 'Keyless Co', '--json'], keyless),
    await runCli(['key', 'create', '--org', org.id, '--name', 'keyless', '--json'], keyless),
    await runCli(['key', 'revoke', existing.keyId, '--json'], keyless),
  ];
  for (const [i, res] of refusals.entries()) {
    expect({ i, code: res.code }).toEqual({ i, code: 2 });
    expect(JSON.parse(res.stdout).error).toMatch(/^(org create|key create|key revoke) needs the ledger signing key file \(LEDGER_SIGNING_KEY_FILE, or DATA_DIR\/ledger-signing-key\)/);
  }
  // Nothing changed: no organization, no key, the key still active, and no record waiting or written.
  expect((await app.services.stores.orgs.list()).map((o) => o.name)).not.toContain('Keyless Co');
  expect((await app.services.stores.apiKeys.forOrg(org.id).list('oldest')).map((k) => [k.key_id, k.revoked_at ?? null])).toEqual([[existing.keyId, null]]);
  expect((await call(`${app.url}/v1/events`, { key: existing.key, body: eventBody() })).status).toBe(201);
  expect(await app.collections.auditOutbox.countDocuments({})).toBe(0);
  expect(app.services.selfAudit.stats.outboxForeign).toBe(0);
}, 60_000);

test('planted, unsealed, wrongly sealed and edited outbox records are never written: named at error level, counted, moved aside', async () => {
  const org = await app.org({ name: 'Victim Co' });
  const before = app.services.selfAudit.stats.outboxForeign;
  // Drained by hand below: the timer stops so that the genuine record stays waiting until it is edited.
  await app.jobs.get('self-audit').stop();
  try {
    const created = JSON.parse((await runCli(['key', 'create', '--org', org.id, '--name', 'ops', '--scopes', 'events:read', '--json'], env)).stdout) as { id: string };
    const [genuine] = await app.collections.auditOutbox.find({ tenant: org.id }).toArray();
    expect(genuine).toMatchObject({ action: 'audit_ledger.key.created', actor: { type: 'operator' }, resource: { type: 'api_key', id: created.id }, mac: expect.any(String) });
    // Edited after sealing: the operator's key now claims retention:manage.
    await app.collections.auditOutbox.updateOne({ _id: genuine?._id ?? '' }, { $set: { 'metadata.scopes': ['events:read', 'retention:manage'] } });

    const cliShaped = (): Omit<AuditOutboxDoc, 'mac'> => ({ _id: uuidv7(), tenant: org.id, actor: { type: 'operator' }, action: 'audit_ledger.key.revoked', resource: { type: 'api_key', id: org.keyId, name: 'test key' }, metadata: {}, at: new Date() });
    // The shape of a genuine erasure entry (the owner as actor, events 5 to 7): authority to delete, if written.
    const erasure: Omit<AuditOutboxDoc, 'mac'> = { _id: uuidv7(), tenant: org.id, actor: { type: 'member', accountId: 'acc_owner', email: 'owner@example.com', role: 'owner' }, action: 'audit_ledger.retention.erased', resource: { type: 'erasure', id: 'erasure_1' }, metadata: { ranges: '5-7', count: 3, reason: 'data_subject_request', held: 0 }, at: new Date() };
    const otherKey = RowMac.fromSigner(signerFromSeed(TEST_LEDGER_SIGNER.name, randomBytes(32)));
    const planted: AuditOutboxDoc[] = [
      erasure,
      // Even sealed with the installation's key (a key-file holder, or a bug): no kind the CLI makes.
      sealOutbox(ROW_MAC, { ...erasure, _id: uuidv7(), actor: { type: 'operator' } }),
      cliShaped(),
      sealOutbox(otherKey, cliShaped()),
      { ...cliShaped(), mac: 'AAAA' },
      // A genuine seal copied onto a record of another organization.
      { ...sealOutbox(ROW_MAC, cliShaped()), tenant: `${org.id}x` },
    ];
    await app.collections.auditOutbox.insertMany(planted);
    const foreignIds = [genuine?._id ?? '', ...planted.map((d) => d._id)];

    await app.services.selfAudit.drainOutbox();
    await app.services.selfAudit.drainOutbox();

    expect(await app.collections.events.find({ tenant: org.id }).toArray()).toEqual([]);
    expect(await app.collections.events.find({ tenant: `${org.id}x` }).toArray()).toEqual([]);
    expect(await app.collections.auditOutbox.countDocuments({})).toBe(0);
    const aside = await app.collections.foreignRows.find({ kind: 'outbox' }).toArray();
    expect(aside.map((f) => f.row._id).sort()).toEqual([...foreignIds].sort());
    expect(aside.find((f) => f.row._id === erasure._id)?.row).toMatchObject({ action: 'audit_ledger.retention.erased', metadata: { ranges: '5-7' } });
    expect(app.services.selfAudit.stats.outboxForeign - before).toBe(foreignIds.length);
    const named = foreignLines();
    for (const doc of [genuine, ...planted]) expect(named).toContainEqual(expect.objectContaining({ id: doc?._id, action: doc?.action }));
    expect(await app.http.metrics.registry.metrics()).toMatch(new RegExp(`^self_audit_outbox_foreign_total ${app.services.selfAudit.stats.outboxForeign}$`, 'm'));
  } finally {
    void app.jobs.get('self-audit').start();
  }
  // The organization's log is intact and still takes the CLI's genuine records.
  expect((await runCli(['key', 'revoke', org.keyId, '--json'], env)).code).toBe(0);
  const [revoked] = await eventually('the revocation\'s record', async () => {
    const docs = await app.collections.events.find({ tenant: org.id }).toArray();
    return docs.length >= 1 && docs;
  });
  expect([revoked?.action, revoked?.api_key_id, revoked?.resource_id]).toEqual(['audit_ledger.key.revoked', 'audit_ledger', org.keyId]);
}, 60_000);

test('without the row key a process drains nothing: the records wait for an instance that has it, and it says so once', async () => {
  const org = await app.org();
  const lines: string[] = [];
  const unkeyed = new SelfAudit({ writeOwn: () => Promise.reject(new Error('must not write')) }, new AuditOutbox(app.collections), null, app.services.clock, createLogger('info', { write: (line: string) => { lines.push(line); } }));
  await app.jobs.get('self-audit').stop();
  try {
    const record = sealOutbox(ROW_MAC, { _id: uuidv7(), tenant: org.id, actor: { type: 'operator' }, action: 'audit_ledger.key.revoked', resource: { type: 'api_key', id: org.keyId }, metadata: {}, at: new Date() });
    await app.collections.auditOutbox.insertOne(record);
    await unkeyed.drainOutbox();
    await unkeyed.drainOutbox();
    expect(await app.collections.auditOutbox.countDocuments({ _id: record._id })).toBe(1);
    expect(unkeyed.stats.outboxForeign).toBe(0);
    expect(lines.filter((line) => line.includes('not drained'))).toHaveLength(1);
  } finally {
    void app.jobs.get('self-audit').start();
  }
  await eventually('the keyed instance writes it', async () => (await app.collections.events.countDocuments({ tenant: org.id })) === 1);
});
