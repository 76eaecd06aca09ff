/**
 * The admin command line: `npm run cli -- <command>`. With --json every command prints exactly one
 * JSON object on stdout; without it, a short human-readable answer. Errors go to stderr, exit code 1.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/env';
import { PLANS, type Plan } from '../domain/plan';
import { apiKeyView } from '../db/apiKeyRepository';
import { connectDatabase, type Database } from '../db/connect';
import { systemClock } from '../domain/time';
import { createLogger } from '../logger';
import { createServices, type Services } from '../services/container';
import { runExport } from './exportCommand';
import { runImport } from './importCommand';
import { runVerify } from './verifyCommand';
import { auditLog } from '../ledger/audit';
import { LedgerStore } from '../db/ledgerStore';
import { parsePrivateKey, parseVerifierKey, type Signer, type Verifier } from '../domain/ledger/note';

/** The installation's signing key, from its key file (LEDGER_SIGNING_KEY_FILE or DATA_DIR's), or null when this machine cannot read it. */
function installationKey(): Signer | null {
  const config = loadConfig();
  try {
    return parsePrivateKey(readFileSync(config.ledgerKeyFile ?? join(config.dataDir, 'ledger-signing-key'), 'utf8'));
  } catch {
    return null;
  }
}

/** The key to check signatures with: --verifier-key, or the installation's. */
function auditVerifier(text: string | undefined): Verifier | null {
  return text ? parseVerifierKey(text) : installationKey();
}

const DEFAULT_IMPORT_BATCH = 500;

const USAGE = `Usage: npm run cli -- <command> [options] [--json]

  org create --name NAME [--plan free|pro|enterprise] [--monthly-cap N]
  org list
  key create --org ORG_ID --name NAME      prints the key once; store it now
  key list --org ORG_ID
  key revoke KEY_ID
  export --url URL --key KEY [--format json|csv] [--actor-id ID] [--action A] [--resource-type T]
         [--resource-id ID] [--organization-id ORG] [--start-date D] [--end-date D] [--out FILE]
         [--with-proofs [--proofs FILE]]   also the ledger's proofs sidecar (default: OUT.proofs.json)
  ledger audit [--org ORG_ID] [--verifier-key VKEY]
         rebuilds every organization's log from its stored events and names each event edited,
         deleted, inserted or moved since it was signed; exit code 1 on any finding
  ledger reseal --org ORG_ID
         for a log the service HALTED (its ledger state missing or not matching what was signed):
         rebuilds it from the stored events and signs them, as an extension of the newest checkpoint
         the key signed, which they must still reproduce; with none, seals them as they are. Needs
         the signing key file. Run ledger audit first: this is the operator's decision, and logged
  verify --verifier-key VKEY --events export.json --proofs proofs.json [--state FILE] [--url URL --key KEY]
         checks a JSON export offline against the signed checkpoint; exit code 1 on any failure
  import --url URL --key KEY [--batch-size N] [--state FILE] FILE|-
         JSON Lines, one create body per line; exactly once, resumable: run it again after an
         interruption. Refused lines are reported with their numbers (exit code 1 if any).

The database is MONGODB_URI, or the embedded one under DATA_DIR (as for npm start).`;

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

const OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  name: { type: 'string' },
  plan: { type: 'string' },
  'monthly-cap': { type: 'string' },
  org: { type: 'string' },
  url: { type: 'string' },
  key: { type: 'string' },
  format: { type: 'string' },
  out: { type: 'string' },
  'actor-id': { type: 'string' },
  action: { type: 'string' },
  'resource-type': { type: 'string' },
  'resource-id': { type: 'string' },
  'organization-id': { type: 'string' },
  'start-date': { type: 'string' },
  'end-date': { type: 'string' },
  'batch-size': { type: 'string' },
  'with-proofs': { type: 'boolean' },
  proofs: { type: 'string' },
  events: { type: 'string' },
  'verifier-key': { type: 'string' },
  state: { type: 'string' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

function need(values: Values, name: 'name' | 'org' | 'url' | 'key'): string {
  const value = values[name];
  if (!value) throw new UsageError(`--${name} is required`);
  return value;
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

/** What a command answers; `exitCode` (default 0) for one that finished but with something to report. */
type Output = { json: Record<string, unknown>; text: string; exitCode?: number };

async function withServices<T>(run: (services: Services) => Promise<T>, signer: Signer | null = null): Promise<T> {
  const config = loadConfig();
  const log = createLogger(process.env.LOG_LEVEL ?? 'warn', process.stderr);
  let database: Database | undefined;
  try {
    database = await connectDatabase(config, log);
    const ledger = signer ? { ledger: { name: signer.name, signer, intervalMs: config.ledgerIntervalMs } } : {};
    return await run(await createServices(database.db, { ...config, ...ledger }, systemClock, log));
  } finally {
    await database?.close();
  }
}

async function dispatch(words: string[], values: Values): Promise<Output> {
  const [group, verb, arg] = words;
  const command = `${group ?? ''} ${verb ?? ''}`.trim();
  switch (command) {
    case 'org create': {
      const name = need(values, 'name');
      const plan = parsePlan(values.plan);
      const monthlyCap = parseCap(values['monthly-cap']);
      return withServices(async (s) => {
        const view = s.orgs.view(await s.orgs.create({ name, plan, monthlyCap }, s.clock.now()));
        const json = { id: view.id, name: view.name, plan: view.plan, monthly_cap: view.monthly_cap };
        return { json, text: `Created organization ${view.id} (${view.name}, ${view.plan}, cap ${view.monthly_cap}/month)` };
      });
    }
    case 'org list':
      return withServices(async (s) => {
        const orgs = (await s.orgs.list()).map((org) => s.orgs.view(org));
        return { json: { organizations: orgs }, text: orgs.map((o) => `${o.id}\t${o.name}\t${o.plan}\t${o.monthly_cap}`).join('\n') || 'No organizations.' };
      });
    case 'key create': {
      const orgId = need(values, 'org');
      const name = need(values, 'name');
      return withServices(async (s) => {
        if (!(await s.orgs.get(orgId))) throw new UsageError(`No organization ${orgId}`);
        const { doc, key } = await s.apiKeys.forOrg(orgId).create(name, s.clock.now());
        const json = { id: doc.key_id, key, name: doc.name, organization_id: doc.org_id };
        return { json, text: `Created API key ${doc.key_id} for ${orgId}. It is shown only now:\n${key}` };
      });
    }
    case 'key list': {
      const orgId = need(values, 'org');
      return withServices(async (s) => {
        const keys = (await s.apiKeys.forOrg(orgId).list('oldest')).map(apiKeyView);
        const text = keys.map((k) => `${k.id}\t${k.name}\t${k.prefix}…${k.last4}\t${k.status}\tlast used ${k.last_used_at ?? 'never'}`).join('\n');
        return { json: { keys }, text: text || 'No keys.' };
      });
    }
    case 'ledger audit': {
      const verifier = auditVerifier(values['verifier-key']);
      return withServices(async (s) => {
        const tenants = values.org ? [values.org] : (await s.orgs.list()).map((org) => org._id);
        const reports = [];
        for (const tenant of tenants) reports.push(await auditLog(new LedgerStore(s.collections).forTenant(tenant), verifier));
        const findings = reports.flatMap((r) => r.findings.map((f) => `${r.tenant}: ${f.kind}: ${f.detail}`));
        const text = [
          ...findings,
          ...reports.map((r) => `${r.tenant}: ${r.events} events, ${r.checkpoints} checkpoints (newest ${r.checkpoint_size}), ${r.findings.length} findings`),
          verifier ? '' : '(checkpoint signatures not checked: no --verifier-key and no key file)',
        ].filter(Boolean).join('\n');
        return { json: { reports }, text, exitCode: findings.length ? 1 : 0 };
      });
    }
    case 'ledger reseal': {
      const orgId = need(values, 'org');
      const signer = installationKey();
      if (!signer) throw new UsageError('ledger reseal needs the ledger signing key file (LEDGER_SIGNING_KEY_FILE, or DATA_DIR/ledger-signing-key)');
      const configured = loadConfig().ledgerName;
      if (configured !== undefined && configured !== signer.name) throw new UsageError(`the signing key is for ${signer.name}, but LEDGER_NAME is ${configured}`);
      return withServices(async (s) => {
        if (!(await s.orgs.get(orgId))) throw new UsageError(`No organization ${orgId}`);
        const sealed = await s.integrator.reseal(orgId);
        const from = sealed.anchor === null ? 'with no signed checkpoint to extend: the stored events were sealed as they are' : `extending the signed checkpoint of size ${sealed.anchor}, which the stored events reproduce`;
        return { json: sealed, text: `Resealed ${orgId} at size ${sealed.size}, ${from}${sealed.planted ? ` (${sealed.planted} checkpoint documents this key did not sign were deleted)` : ''}` };
      }, signer);
    }
    case 'key revoke': {
      if (!arg) throw new UsageError('key revoke needs the KEY_ID');
      return withServices(async (s) => {
        const doc = await s.apiKeys.revoke(arg, s.clock.now());
        if (!doc) throw new UsageError(`No API key ${arg}`);
        const view = apiKeyView(doc);
        return { json: { id: view.id, status: view.status, revoked_at: view.revoked_at }, text: `Revoked ${view.id}` };
      });
    }
    default:
      if (group === 'export') {
        if (values['with-proofs'] && !values.out) throw new UsageError('--with-proofs needs --out FILE');
        const summary = await runExport({
          url: need(values, 'url'),
          key: need(values, 'key'),
          format: values.format,
          out: values.out,
          quiet: false,
          filters: {
            actor_id: values['actor-id'],
            action: values.action,
            resource_type: values['resource-type'],
            resource_id: values['resource-id'],
            organization_id: values['organization-id'],
            start_date: values['start-date'],
            end_date: values['end-date'],
          },
          json: Boolean(values.json),
          proofs: values['with-proofs'] ? (values.proofs ?? (values.out ? `${values.out}.proofs.json` : undefined)) : undefined,
        });
        const wrote = summary.out ? `Wrote ${summary.bytes} bytes to ${summary.out}${summary.proofs ? ` and the proofs to ${summary.proofs}` : ''}` : '';
        return { json: summary, text: wrote };
      }
      if (group === 'verify') {
        const verifierKey = values['verifier-key'];
        if (!verifierKey || !values.events || !values.proofs) throw new UsageError('verify needs --verifier-key, --events and --proofs');
        const summary = await runVerify({ verifierKey, events: values.events, proofs: values.proofs, state: values.state, url: values.url, key: values.key });
        const given = Object.entries(summary.filters).map(([name, value]) => `${name}=${value}`).join(', ');
        const verdict = !summary.ok
          ? 'NOT VERIFIED'
          : summary.scope === 'complete'
            ? 'VERIFIED: the export is the whole log up to the signed checkpoint, unchanged'
            : `VERIFIED (INCLUSION ONLY): each exported event is in the signed tree, unchanged; the export was filtered (${given}), so that it holds every matching event is not proven`;
        const text = [...summary.verdicts.map((v) => `${v.ok ? 'ok  ' : 'FAIL'}  ${v.check}`), verdict].join('\n');
        return { json: summary, text, exitCode: summary.ok ? 0 : 1 };
      }
      if (group === 'import') {
        if (!verb || arg) throw new UsageError('import needs one FILE (or - for stdin)');
        const batchSize = values['batch-size'] === undefined ? DEFAULT_IMPORT_BATCH : Number(values['batch-size']);
        if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) throw new UsageError('--batch-size must be a whole number from 1 to 10000');
        const summary = await runImport({ url: need(values, 'url'), key: need(values, 'key'), file: verb, state: values.state, batchSize, quiet: false });
        const refused = summary.refused.map((r) => `line ${r.line}: ${r.message}${r.fields ? ` (${r.fields.join(', ')})` : ''}`);
        const text = [
          ...refused,
          `Imported ${summary.imported} events${summary.replayed ? `, ${summary.replayed} were already there` : ''}` +
            `${summary.resumed_after_line ? ` (resumed after line ${summary.resumed_after_line})` : ''}; ${summary.refused.length} lines refused.`,
        ].join('\n');
        return { json: summary, text, exitCode: summary.refused.length ? 1 : 0 };
      }
      throw new UsageError(command ? `Unknown command: ${command}` : 'No command given');
  }
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) {
    process.stdout.write(`${USAGE}\n`);
    return positionals.length === 0 && !values.help ? 2 : 0;
  }
  try {
    const output = await dispatch(positionals, values);
    if (values.json) process.stdout.write(`${JSON.stringify(output.json)}\n`);
    else if (output.text) process.stdout.write(`${output.text}\n`);
    return output.exitCode ?? 0;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (values.json) process.stdout.write(`${JSON.stringify({ error: message })}\n`);
    process.stderr.write(`${message}${error instanceof UsageError ? `\n\n${USAGE}` : ''}\n`);
    return error instanceof UsageError ? 2 : 1;
  }
}

void main(process.argv.slice(2)).then((code) => process.exit(code));
