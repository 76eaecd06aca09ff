/** The commands that talk to a running service over its REST API, or to files only: export, import, verify. */
import { all, type Command, flag, need, opt, str, strs, UsageError } from '../command';
import { runExport } from '../exportCommand';
import { runImport } from '../importCommand';
import { runVerify } from '../verifyCommand';
import { runMonitor } from '../monitorCommand';

const DEFAULT_IMPORT_BATCH = 500;

export const clientCommands: Command[] = [
  {
    words: 'export',
    summary: 'stream an export over the REST API to a file (or stdout without --json)',
    synopsis: '--url URL --key KEY [--format json|csv] [--actor-id ID] [--action A] [--resource-type T] [--resource-id ID]\n' +
      '       [--organization-id ORG] [--start-date D] [--end-date D] [--out FILE] [--with-proofs [--proofs FILE]]',
    details: '--with-proofs also writes the ledger\'s proofs sidecar (default: OUT.proofs.json), both pinned to the newest checkpoint.',
    options: {
      url: str, key: str, format: str, out: str, 'actor-id': str, action: str, 'resource-type': str, 'resource-id': str,
      'organization-id': str, 'start-date': str, 'end-date': str, 'with-proofs': flag, proofs: str,
    },
    async run(values) {
      const out = opt(values, 'out');
      if (values['with-proofs'] === true && !out) throw new UsageError('--with-proofs needs --out FILE');
      const summary = await runExport({
        url: need(values, 'url'),
        key: need(values, 'key'),
        format: opt(values, 'format'),
        out,
        quiet: false,
        filters: {
          actor_id: opt(values, 'actor-id'),
          action: opt(values, 'action'),
          resource_type: opt(values, 'resource-type'),
          resource_id: opt(values, 'resource-id'),
          organization_id: opt(values, 'organization-id'),
          start_date: opt(values, 'start-date'),
          end_date: opt(values, 'end-date'),
        },
        json: values.json === true,
        proofs: values['with-proofs'] === true ? (opt(values, 'proofs') ?? `${out ?? ''}.proofs.json`) : undefined,
      });
      const wrote = summary.out ? `Wrote ${summary.bytes} bytes to ${summary.out}${summary.proofs ? ` and the proofs to ${summary.proofs}` : ''}` : '';
      return { json: summary, text: wrote };
    },
  },
  {
    words: 'import',
    summary: 'import JSON Lines (one create body per line) exactly once, resumably',
    synopsis: '--url URL --key KEY [--batch-size N] [--state FILE] FILE|-',
    details: 'Run it again after an interruption: it resumes. Refused lines are reported with their numbers (exit code 1 if any).',
    options: { url: str, key: str, 'batch-size': str, state: str },
    positionals: { min: 1, max: 1 },
    async run(values, [file = '']) {
      const given = opt(values, 'batch-size');
      const batchSize = given === undefined ? DEFAULT_IMPORT_BATCH : Number(given);
      if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) throw new UsageError('--batch-size must be a whole number from 1 to 10000');
      const summary = await runImport({ url: need(values, 'url'), key: need(values, 'key'), file, state: opt(values, 'state'), batchSize, quiet: false });
      const refused = summary.refused.map((r) => `line ${r.line}: ${r.message}${r.fields ? ` (${r.fields.join(', ')})` : ''}`);
      const text = [
        ...refused,
        `Imported ${summary.imported} events${summary.replayed ? `, ${summary.replayed} were already there` : ''}` +
          `${summary.resumed_after_line ? ` (resumed after line ${summary.resumed_after_line})` : ''}; ${summary.refused.length} lines refused.`,
      ].join('\n');
      return { json: summary, text, exitCode: summary.refused.length ? 1 : 0 };
    },
  },
  {
    words: 'monitor',
    summary: 'check that the installation log only grew and that every checkpoint of your organization in it extends the one before (exit 1 on any failure)',
    synopsis: '--url URL --key KEY --verifier-key VKEY --state FILE [--policy FILE] [--installation-token TOKEN]',
    details: 'Run it regularly (cron): it reads the installation log through its tlog-tiles API from where the last run stopped (--state), checks its newest checkpoint\'s signature and, with --policy, its witnesses\' quorum, rebuilds its tree from the new entries, and asks the service for the consistency proof between each two successive checkpoints of your organization\'s log found there. A history rewritten or wiped after your last run fails it, even if you never exported.',
    options: { url: str, key: str, 'verifier-key': str, state: str, policy: str, 'installation-token': str },
    async run(values) {
      const summary = await runMonitor({
        url: need(values, 'url'), key: need(values, 'key'), verifierKey: need(values, 'verifier-key'), state: need(values, 'state'),
        policy: opt(values, 'policy'), installationToken: opt(values, 'installation-token'),
      });
      const text = [...summary.verdicts.map((v) => `${v.ok ? 'ok  ' : 'FAIL'}  ${v.check}`), summary.ok ? 'OK: one history, witnessed as far as the policy says' : 'NOT OK'].join('\n');
      return { json: summary, text, exitCode: summary.ok ? 0 : 1 };
    },
  },
  {
    words: 'verify',
    summary: 'check a JSON export and its proofs offline against the signed checkpoint (exit 1 on any failure)',
    synopsis: '--verifier-key VKEY --events export.json --proofs proofs.json [--policy FILE] [--state FILE] [--url URL --key KEY] [--producer KEY_ID=PRODUCER_VKEY ...]',
    details: '--policy (a c2sp.org/tlog-policy file naming the witnesses and their quorum) checks that the checkpoint is an entry of an installation checkpoint the witnesses cosigned; without it, no witness is checked and the verdict says so. --state keeps the newest checkpoint seen, so a later rewrite of history fails; --url and --key also ask the service for the consistency proof from it. Producer signatures: every event of an API key the log binds to a producer key must carry a valid signature by it; an unfiltered export holds every binding entry, a filtered one may not, so events of keys it shows no binding for are said to be unchecked. --producer (repeatable) pins a key\'s binding: its events are checked in any export, and the log must agree.',
    options: { 'verifier-key': str, events: str, proofs: str, policy: str, state: str, url: str, key: str, producer: strs },
    async run(values) {
      const verifierKey = opt(values, 'verifier-key');
      const events = opt(values, 'events');
      const proofs = opt(values, 'proofs');
      if (!verifierKey || !events || !proofs) throw new UsageError('verify needs --verifier-key, --events and --proofs');
      const summary = await runVerify({ verifierKey, events, proofs, policy: opt(values, 'policy'), state: opt(values, 'state'), url: opt(values, 'url'), key: opt(values, 'key'), producers: pinnedProducers(all(values, 'producer')) });
      const given = Object.entries(summary.filters).map(([name, value]) => `${name}=${value}`).join(', ');
      const verdict = !summary.ok
        ? 'NOT VERIFIED'
        : summary.scope === 'complete'
          ? 'VERIFIED: the export is the whole log up to the signed checkpoint, unchanged'
          : `VERIFIED (INCLUSION ONLY): each exported event is in the signed tree, unchanged; the export was filtered (${given}), so that it holds every matching event is not proven`;
      const witnessed = summary.witnesses === null
        ? 'No witness was checked (no --policy): the checkpoint is proven signed by the operator\'s key only.'
        : `Witnessed by ${summary.witnesses.join(', ') || 'none'}, checked against the policy.`;
      const text = [...summary.verdicts.map((v) => `${v.ok ? 'ok  ' : 'FAIL'}  ${v.check}`), `${verdict}. ${witnessed}`].join('\n');
      return { json: summary, text, exitCode: summary.ok ? 0 : 1 };
    },
  },
];

/** `--producer KEY_ID=VKEY` values as pinned bindings. */
function pinnedProducers(given: string[]): Map<string, string> {
  const pinned = new Map<string, string>();
  for (const value of given) {
    const split = value.indexOf('=');
    if (split <= 0) throw new UsageError(`--producer ${value}: give KEY_ID=PRODUCER_VKEY (the API key's id, the producer's verifier key)`);
    pinned.set(value.slice(0, split), value.slice(split + 1));
  }
  return pinned;
}
