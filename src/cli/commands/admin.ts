/**
 * The operator's commands on the database: organizations, keys, and the ledger's audit and reseal.
 * Changes to an organization are left in the self-audit outbox, which a running instance writes into
 * the organization's log (services/selfAudit.ts), each record sealed with the row key derived from the
 * signing key file: a running instance writes no record without it, so those commands need the key file.
 */
import { bindingEntry, ProducerKeys } from '../../services/producerKeys';
import { DEFAULT_SCOPES, type Scope, SCOPES } from '../../domain/apiKey';
import { loadConfig } from '../../config/env';
import { apiKeyView } from '../../db/apiKeyRepository';
import { parseVerifierKey } from '../../domain/ledger/note';
import { RowMac } from '../../domain/ledger/rowMac';
import { PLANS, type Plan } from '../../domain/plan';
import { systemClock } from '../../domain/time';
import { auditEntriesOf, auditInstallation, auditLog } from '../../ledger/audit';
import { reseal, resealSide } from '../../ledger/reseal';
import { createLogger } from '../../logger';
import { installationKey, withAdminDatabase } from '../adminDatabase';
import { type Command, flag, need, opt, str, UsageError } from '../command';

/**
 * The row key the outbox records of `command` are sealed with, from the installation's key file; asked
 * for before anything changes, so that a command that could not leave its record changes nothing.
 */
function outboxKey(command: string): RowMac {
  const signer = installationKey();
  if (!signer) throw new UsageError(`${command} needs the ledger signing key file (LEDGER_SIGNING_KEY_FILE, or DATA_DIR/ledger-signing-key): its record in the organization's log is sealed with it, and a running instance writes no record without a valid seal`);
  return RowMac.fromSigner(signer);
}

function parsePlan(value: string | undefined): Plan {
  if (value === undefined) return 'free';
  if (!(PLANS as readonly string[]).includes(value)) throw new UsageError(`--plan must be one of ${PLANS.join(', ')}`);
  return value as Plan;
}

function parseCap(value: string | undefined): number | null {
  if (value === undefined) return null;
  if (!/^\d+$/.test(value)) throw new UsageError('--monthly-cap must be a whole number');
  return Number(value);
}

/**
 * `--scopes a,b`: each one of DEFAULT_SCOPES; absent, all three. `retention:manage` is refused: only an
 * owner grants it (domain/roles.ts `canGrant`), and the operator is no member of the organization.
 */
function parseScopes(given: string | undefined): Scope[] {
  if (given === undefined) return [...DEFAULT_SCOPES];
  const scopes = given.split(',').map((s) => s.trim()).filter(Boolean);
  if (scopes.includes('retention:manage')) throw new UsageError('--scopes: retention:manage is granted by an owner only; an owner creates such a key in the dashboard (API keys)');
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length || scopes.length === 0) throw new UsageError(`--scopes takes a comma-separated list of ${DEFAULT_SCOPES.join(', ')}${unknown.length ? `; unknown: ${unknown.join(', ')}` : ''}`);
  return scopes as Scope[];
}

export const adminCommands: Command[] = [
  {
    words: 'org create',
    summary: 'create an organization',
    synopsis: '--name NAME [--plan free|pro|enterprise] [--monthly-cap N]',
    options: { name: str, plan: str, 'monthly-cap': str },
    async run(values) {
      const name = need(values, 'name');
      const plan = parsePlan(opt(values, 'plan'));
      const monthlyCap = parseCap(opt(values, 'monthly-cap'));
      const mac = outboxKey('org create');
      return withAdminDatabase(async (db) => {
        const view = db.orgs.view(await db.orgs.create({ name, plan, monthlyCap }, systemClock.now()));
        await db.outbox.add(mac, view.id, 'audit_ledger.organization.created', { type: 'organization', id: view.id, name }, { plan: view.plan, monthly_cap: view.monthly_cap }, systemClock.now());
        const json = { id: view.id, name: view.name, plan: view.plan, monthly_cap: view.monthly_cap };
        return { json, text: `Created organization ${view.id} (${view.name}, ${view.plan}, cap ${view.monthly_cap}/month)` };
      }, { indexes: true });
    },
  },
  {
    words: 'org list',
    summary: 'list the organizations',
    synopsis: '',
    options: {},
    run: () => withAdminDatabase(async (db) => {
      const orgs = (await db.orgs.list()).map((org) => db.orgs.view(org));
      return { json: { organizations: orgs }, text: orgs.map((o) => `${o.id}\t${o.name}\t${o.plan}\t${o.monthly_cap}`).join('\n') || 'No organizations.' };
    }),
  },
  {
    words: 'key create',
    summary: 'create an API key (shown once: store it now)',
    synopsis: '--org ORG_ID --name NAME [--scopes events:write,events:read,ledger:read]',
    details: 'Without --scopes the key has all three. A read-only key for an auditor: --scopes events:read,ledger:read. retention:manage is given by an owner, in the dashboard, only.',
    options: { org: str, name: str, scopes: str },
    async run(values) {
      const orgId = need(values, 'org');
      const name = need(values, 'name');
      const scopes = parseScopes(opt(values, 'scopes'));
      const mac = outboxKey('key create');
      return withAdminDatabase(async (db) => {
        if (!(await db.orgs.get(orgId))) throw new UsageError(`No organization ${orgId}`);
        const { doc, key } = await db.apiKeys.forOrg(orgId).create(name, systemClock.now(), scopes);
        await db.outbox.add(mac, orgId, 'audit_ledger.key.created', { type: 'api_key', id: doc.key_id, name }, { scopes: [...scopes] }, systemClock.now());
        const json = { id: doc.key_id, key, name: doc.name, organization_id: doc.org_id, scopes: doc.scopes };
        return { json, text: `Created API key ${doc.key_id} for ${orgId} with ${scopes.join(', ')}. It is shown only now:\n${key}` };
      }, { indexes: true });
    },
  },
  {
    words: 'key list',
    summary: 'list an organization\'s keys (never the key itself)',
    synopsis: '--org ORG_ID',
    options: { org: str },
    async run(values) {
      const orgId = need(values, 'org');
      return withAdminDatabase(async (db) => {
        const keys = (await db.apiKeys.forOrg(orgId).list('oldest')).map(apiKeyView);
        const text = keys.map((k) => `${k.id}\t${k.name}\t${k.prefix}…${k.last4}\t${k.status}\tlast used ${k.last_used_at ?? 'never'}`).join('\n');
        return { json: { keys }, text: text || 'No keys.' };
      });
    },
  },
  {
    words: 'key revoke',
    summary: 'revoke a key at once, on every instance',
    synopsis: 'KEY_ID',
    options: {},
    positionals: { min: 1, max: 1 },
    async run(_values, [keyId = '']) {
      const mac = outboxKey('key revoke');
      return withAdminDatabase(async (db) => {
        const doc = await db.apiKeys.revoke(keyId, systemClock.now());
        if (!doc) throw new UsageError(`No API key ${keyId}`);
        await db.outbox.add(mac, doc.org_id, 'audit_ledger.key.revoked', { type: 'api_key', id: doc.key_id, name: doc.name }, {}, systemClock.now());
        const view = apiKeyView(doc);
        return { json: { id: view.id, status: view.status, revoked_at: view.revoked_at }, text: `Revoked ${view.id}` };
      });
    },
  },
  {
    words: 'key bind-producer',
    summary: 'bind a key to a producer\'s Ed25519 key, before its first event: every event it sends must then be signed',
    synopsis: '--org ORG_ID --producer-key VKEY KEY_ID',
    details: 'VKEY is the producer\'s verifier key, <name>+<key id>+<base64 key> (the client package\'s generateProducerKey() returns one, as does Go\'s note.GenerateKey). A key that has sent an event, or has another producer key, cannot be bound; binding the same producer key again is harmless. The binding is recorded in the organization\'s log, where verifiers read it.',
    options: { org: str, 'producer-key': str },
    positionals: { min: 1, max: 1 },
    async run(values, [keyId = '']) {
      const orgId = need(values, 'org');
      const producerKey = need(values, 'producer-key');
      const mac = outboxKey('key bind-producer');
      return withAdminDatabase(async (db) => {
        const producers = new ProducerKeys(db.producerClaims, db.apiKeys, systemClock);
        const bound = await producers.bind(orgId, keyId, producerKey, (name, text) => {
          const entry = bindingEntry({ type: 'operator' }, keyId, name, text);
          return db.outbox.add(mac, orgId, entry.action, entry.resource, entry.metadata, systemClock.now());
        });
        return { json: bound, text: `Bound ${bound.api_key_id} to producer key ${bound.producer_key}: its events must now carry the producer's signature` };
      }, { indexes: true });
    },
  },
  {
    words: 'ledger audit',
    summary: 'name every event edited, deleted, inserted or moved since it was signed (exit 1 on any finding)',
    synopsis: '[--org ORG_ID] [--verifier-key VKEY]',
    details: 'Rebuilds each organization\'s log from its stored events and compares it with what was signed. Checkpoint signatures are checked with --verifier-key, or the installation\'s key file when this machine can read it.',
    options: { org: str, 'verifier-key': str },
    async run(values) {
      const text = opt(values, 'verifier-key');
      const keyFile = installationKey();
      const verifier = text ? parseVerifierKey(text) : keyFile;
      // Rows' MACs need the key file itself, of the same key as the verifier's.
      const macKey = keyFile && (!verifier || keyFile.publicKey.equals(verifier.publicKey)) ? keyFile : null;
      return withAdminDatabase(async (db) => {
        const org = opt(values, 'org');
        const tenants = org ? [org] : await db.orgs.ids();
        const reports = [];
        for (const tenant of tenants) {
          const report = await auditLog(db.ledger.forTenant(tenant), verifier, new Date(), macKey);
          // Audited alone, an organization is also looked for in the installation log (with all of them,
          // auditInstallation does it in its one pass): its checkpoints there, none stored, is a wipe.
          if (org) report.findings.push(...(await auditEntriesOf(db.ledger, tenant, verifier)));
          reports.push(report);
        }
        const installation = org ? [] : await auditInstallation(db.ledger, db.witnesses, verifier);
        const findings = [...installation.map((f) => `installation: ${f.kind}: ${f.detail}`), ...reports.flatMap((r) => r.findings.map((f) => `${r.tenant}: ${f.kind}: ${f.detail}`))];
        const lines = [
          ...findings,
          ...reports.map((r) => `${r.tenant}: ${r.events} events, ${r.checkpoints} checkpoints (newest ${r.checkpoint_size}), ${r.removed.pruned} pruned and ${r.removed.erased} erased under retention entries, ${r.findings.length} findings`),
          verifier ? '' : '(checkpoint signatures not checked: no --verifier-key and no key file)',
          macKey ? '' : '(rows\' MACs not checked: no key file of this installation here, so rows written behind its back are named only where they changed what was signed)',
        ];
        return { json: { reports, installation }, text: lines.filter(Boolean).join('\n'), exitCode: findings.length ? 1 : 0 };
      });
    },
  },
  {
    words: 'ledger key',
    summary: 'print the installation\'s verifier key (what auditors pin) from the signing key file',
    synopsis: '',
    details: 'Reads the key file (LEDGER_SIGNING_KEY_FILE, or DATA_DIR/ledger-signing-key) on this machine; nothing else is needed. Elsewhere: GET /v1/ledger/key with an API key scoped ledger:read, or the dashboard\'s Ledger page.',
    options: {},
    run() {
      const signer = installationKey();
      if (!signer) throw new UsageError('ledger key needs the ledger signing key file (LEDGER_SIGNING_KEY_FILE, or DATA_DIR/ledger-signing-key): run it where the service runs, or use GET /v1/ledger/key with an API key');
      return Promise.resolve({ json: { verifier_key: signer.text, name: signer.name }, text: signer.text });
    },
  },
  {
    words: 'ledger clear-alarm',
    summary: 'clear a witness\'s alarm once investigated: the installation log signs again if the witness agrees',
    synopsis: '--witness NAME',
    details: 'An alarm means a witness holds a history the installation log does not extend (the database was rolled back or wiped, or another copy of the service signed another history). Clearing it does not make a witness cosign: one that really holds another history raises it again at the next submission.',
    options: { witness: str },
    async run(values) {
      const name = need(values, 'witness');
      return withAdminDatabase(async (db) => {
        const cleared = await db.witnesses.clearAlarm(name);
        return { json: { witness: name, cleared }, text: cleared ? `Cleared the alarm of witness ${name}` : `Witness ${name} has no alarm`, exitCode: cleared ? 0 : 1 };
      });
    },
  },
  {
    words: 'ledger reseal',
    summary: 'sign a HALTED organization\'s log again from its stored events (run ledger audit first)',
    synopsis: '--org ORG_ID [--adopt | --set-aside]',
    details: 'For a log the service halted (its ledger state missing, or not matching what was signed): rebuilds it from the stored events and signs them, as an extension of the newest checkpoint the key signed, which they must still reproduce; with none, seals them as they are. Past that checkpoint only rows with a valid MAC are signed; --adopt seals rows without one as they are (an earlier version\'s rows that a crash left unsigned, once you checked them), --set-aside moves them into foreign_rows. Needs the signing key file. This is the operator\'s decision, and it is logged.',
    options: { org: str, adopt: flag, 'set-aside': flag },
    async run(values) {
      const orgId = need(values, 'org');
      const signer = installationKey();
      if (!signer) throw new UsageError('ledger reseal needs the ledger signing key file (LEDGER_SIGNING_KEY_FILE, or DATA_DIR/ledger-signing-key)');
      const config = loadConfig();
      if (config.ledgerName !== undefined && config.ledgerName !== signer.name) throw new UsageError(`the signing key is for ${signer.name}, but LEDGER_NAME is ${config.ledgerName}`);
      return withAdminDatabase(async (db) => {
        if (!(await db.orgs.get(orgId))) throw new UsageError(`No organization ${orgId}`);
        const log = createLogger(config.cliLogLevel, process.stderr);
        const side = resealSide({ store: db.ledger, signer, clock: systemClock, log });
        if (values.adopt === true && values['set-aside'] === true) throw new UsageError('--adopt and --set-aside exclude each other');
        const sealed = await reseal(side, orgId, { adopt: values.adopt === true, setAside: values['set-aside'] === true });
        const from = sealed.anchor === null ? 'with no signed checkpoint to extend: the stored events were sealed as they are' : `extending the signed checkpoint of size ${sealed.anchor}, which the stored events reproduce`;
        const rows = [
          sealed.planted ? `${sealed.planted} checkpoint documents this key did not sign were deleted` : '',
          sealed.adopted ? `${sealed.adopted} rows without a valid MAC adopted` : '',
          sealed.setAside ? `${sealed.setAside} rows without a valid MAC moved into foreign_rows` : '',
          sealed.foreignLeft ? `${sealed.foreignLeft} rows without a valid MAC past it left unsigned (--adopt or --set-aside)` : '',
        ].filter(Boolean);
        return { json: sealed, text: `Resealed ${orgId} at size ${sealed.size}, ${from}${rows.length ? ` (${rows.join('; ')})` : ''}` };
      });
    },
  },
];
