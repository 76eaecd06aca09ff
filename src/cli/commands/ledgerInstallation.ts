/**
 * `ledger new-installation`: the operator's explicit way to begin a new installation on a database
 * whose ledger another key signed (the key file is lost; a start refuses: ledger/keyFit.ts). It keeps
 * the organizations, accounts, API keys and events, and begins every organization's log anew under the
 * key in the key file (made now when there is none): the old ledger state (checkpoints, tiles, heads,
 * the installation log's entries, the witnesses' records and cosignatures) is dropped, every stored
 * event and tombstone is taken as the new installation's own (its row MAC made with the new key), and
 * each organization's stored events are sealed as they are (`ledger reseal` with nothing to extend).
 * Nothing happens without `--confirm` or while an instance runs; what was done is logged at warn level
 * and recorded in `ledger_installations` before anything is dropped.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { hostname, userInfo } from 'node:os';
import { resolve } from 'node:path';
import { loadConfig } from '../../config/env';
import type { InstallationStore, LedgerInstallationDoc } from '../../db/installationStore';
import { hex8 } from '../../domain/ledger/formats';
import { RowMac } from '../../domain/ledger/rowMac';
import { systemClock } from '../../domain/time';
import { INSTALLATION, LedgerHalt } from '../../domain/ledger/log';
import { ledgerKeyMismatch } from '../../ledger/keyFit';
import { reseal, resealSide } from '../../ledger/reseal';
import { defaultLedgerName, loadOrCreateSigningKey, readSigningKey } from '../../ledger/signingKey';
import { createLogger } from '../../logger';
import { withAdminDatabase } from '../adminDatabase';
import { type Command, flag, UsageError } from '../command';

/** Instances bump their counter every second; one whose counter moves across this wait is running. */
const LIVENESS_WAIT_MS = 2500;

/** How many instances are running on the database: their heartbeat counters move. */
async function runningInstances(installation: Pick<InstallationStore, 'instanceBeats'>): Promise<number> {
  const before = await installation.instanceBeats();
  if (before.size === 0) return 0;
  await sleep(LIVENESS_WAIT_MS);
  const after = await installation.instanceBeats();
  return [...after].filter(([id, beat]) => before.has(id) && before.get(id) !== beat).length;
}

export const ledgerInstallationCommands: Command[] = [
  {
    words: 'ledger new-installation',
    summary: 'begin a new installation on purpose: every organization\'s log signed anew under the key file\'s key (the old key is lost)',
    synopsis: '[--confirm]',
    details: [
      'For a database whose ledger another key signed, when that key file is lost (the service refuses to start). Keeps organizations, accounts, API keys',
      'and events; drops the ledger state (checkpoints, tiles, heads, installation log entries, witness records and cosignatures); takes every stored',
      'event as the new installation\'s own and seals each organization\'s events as they are, under the key in LEDGER_SIGNING_KEY_FILE (made now',
      'when there is none). Every customer\'s monitor sees a new verifier key and a history that does not extend the one it followed; the witnesses',
      'must be given the new key; log streams with secrets must be created again. Without --confirm it only says what it would do. Stop every',
      'instance first. Logged, and recorded in the collection ledger_installations. See the README, "Data and reset".',
    ].join('\n'),
    options: { confirm: flag },
    async run(values) {
      const config = loadConfig();
      const keyFile = resolve(config.ledgerKeyFile);
      const existing = readSigningKey(keyFile, config.ledgerName);
      const log = createLogger(config.cliLogLevel, process.stderr);
      return withAdminDatabase(async ({ orgs, ledger, installation }) => {
        const mismatch = await ledgerKeyMismatch(installation, existing);
        if (!mismatch) {
          if (existing) throw new Error(`the stored ledger is signed by the key in ${keyFile} (${existing.name}, key id ${hex8(existing.id)}), or none is stored: the service starts with it as it is, and nothing is begun anew. For a halted organization, see \`ledger audit\` and \`ledger reseal\``);
          return { json: { begun: false, reason: 'no ledger checkpoint is stored' }, text: `No ledger checkpoint is stored: the service starts as it is (it makes the key ${keyFile} at its first start). Nothing was changed.` };
        }
        const orgIds = await orgs.ids();
        const replaced = { signers: mismatch.signers, ...(await installation.ledgerSize(INSTALLATION)) };
        const newKey = existing ? `the key in ${keyFile} (${existing.name}, key id ${hex8(existing.id)})` : `a new key, made at ${keyFile}`;
        const plan = `the stored ledger (${replaced.checkpoints} checkpoints, ${replaced.entries} installation log entries) was signed by ${replaced.signers.join(', ') || 'another key'}; a new installation would drop it and sign the logs of its ${orgIds.length} organization(s) anew under ${newKey}, keeping their events`;
        const running = await runningInstances(installation);
        if (running > 0) throw new Error(`${running} instance(s) of the service are running on this database: stop every instance first (${plan})`);
        if (values.confirm !== true) throw new UsageError(`Nothing was changed: ${plan}. Every customer's monitor will see it. Run again with --confirm to do it.`);

        const { signer, created } = existing ? { signer: existing, created: false } : loadOrCreateSigningKey(keyFile, config.ledgerName, defaultLedgerName(config.publicUrl, config.port));
        const record: LedgerInstallationDoc = {
          _id: randomUUID(),
          begun_at: systemClock.now(),
          by: `${userInfo().username}@${hostname()}`,
          key_file: keyFile,
          verifier_key: signer.text,
          key_created: created,
          replaced,
          organizations: orgIds.length,
          state: 'begun',
        };
        // Recorded before anything is dropped: a run cut short still leaves its record.
        await installation.recordBegun(record);
        log.warn({ record: record._id, keyFile, verifierKey: signer.text, replaced }, 'NEW INSTALLATION begun by an operator: the ledger signed by another key is dropped and every organization\'s log is signed anew');
        const sealed = await installation.sealRows(RowMac.fromSigner(signer));
        await installation.dropLedger();
        const side = resealSide({ store: ledger, signer, clock: systemClock, log });
        const resealed: { org: string; size: number }[] = [];
        for (const org of orgIds) {
          try {
            resealed.push({ org, size: (await reseal(side, org)).size });
          } catch (error) {
            // An organization with no events has no log to seal: its first event begins it.
            if (!(error instanceof LedgerHalt)) throw error;
          }
        }
        await installation.recordDone(record._id, systemClock.now(), resealed);
        const streams = await installation.countStreams();
        const json = { begun: true, record: record._id, key_file: keyFile, key_created: created, verifier_key: signer.text, replaced, resealed, rows_sealed: sealed.rows, rows_unreadable: sealed.unreadable, streams };
        const text = [
          `Began a new installation (record ${record._id} in ledger_installations): ${resealed.length} of ${orgIds.length} organizations' logs signed anew under ${created ? 'a new key made at' : 'the key in'} ${keyFile}.`,
          `The new verifier key, for auditors, customers' monitors and the witnesses' configuration: ${signer.text}`,
          ...(sealed.unreadable ? [`${sealed.unreadable} stored rows could not be hashed and were left as they are (foreign; \`ledger audit\` names them).`] : []),
          ...(streams ? [`${streams} log stream(s) exist: their stored secrets were sealed with the old key; create those with a secret again.`] : []),
        ].join('\n');
        return { json, text };
      });
    },
  },
];
