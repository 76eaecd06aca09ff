/**
 * The upgrade to sealed rows (db/rowMacs.ts), run at start-up before anything is written or signed.
 * Events and tombstones stored by versions before MACs have none, and nothing tells them from rows
 * written into the database behind the service's back, so none is trusted as it is: a row is sealed only
 * where a checkpoint this installation's key signed covers it and the stored rows reproduce that
 * checkpoint's root (then its content is exactly what was signed). Rows past an organization's newest
 * signed checkpoint are not sealed: start-up stops and names them (the operator checks them, then
 * `ledger reseal ORG --adopt` seals them as they are, or `--set-aside` moves them into `foreign_rows`).
 * A normal stop signs every stored event first, so such rows are left only by a crash just before the
 * upgrade. Once a pass finds nothing left, the installation is marked (`installation_state`,
 * `row_macs`): from then on a row without a MAC is foreign, never an earlier version's.
 */
import type { Logger } from 'pino';
import { checkpointProblem } from '../domain/ledger/checkpoint';
import { eventLeafHash } from '../domain/ledger/eventHash';
import { nodesOf, rootHash } from '../domain/ledger/merkle';
import type { Signer } from '../domain/ledger/note';
import { RowMac } from '../domain/ledger/rowMac';
import { type LedgerCheckpointDoc, leafCommitOfStored } from '../db/documents';
import { checkpointId, type LedgerStore, type TenantLedgerStore } from '../db/ledgerStore';
import { isOwnEntry, isOwnStored, rowMacOf } from '../db/rowMacs';
import { logOrigin } from '../domain/ledger/log';

/** Rows sealed per write. */
const SEAL_BATCH = 1_000;

/** Start-up refused: rows of an earlier version that no signed checkpoint covers. */
export class UnsealedRowsError extends Error {
  override readonly name = 'UnsealedRowsError';
}

/** The newest checkpoint of the organization's log that this key signed, if any. */
export async function newestSigned(store: TenantLedgerStore, signer: Signer): Promise<LedgerCheckpointDoc | null> {
  const origin = logOrigin(signer.name, store.tenant);
  for await (const doc of store.checkpointsNewestFirst()) {
    if (doc._id === checkpointId(store.tenant, doc.size) && checkpointProblem(doc, origin, signer) === null) return doc;
  }
  return null;
}

/**
 * The size of the organization's newest checkpoint this installation signed, as far as anything
 * authenticated says: its checkpoints that the key signed, and the installation log's entries of its log
 * that are the service's own (their bodies are the checkpoints'). Neither the head document nor the
 * checkpoints' presence is needed: numbers up to it are never given again, even with the organization's
 * ledger state deleted.
 */
export async function signedSizeOf(ledger: LedgerStore, signer: Signer, tenant: string): Promise<number> {
  let size = (await newestSigned(ledger.forTenant(tenant), signer))?.size ?? 0;
  const rowMac = RowMac.fromSigner(signer);
  for await (const entry of ledger.entriesWithOrigin(logOrigin(signer.name, tenant))) {
    const entrySize = Number(entry.body.split('\n')[1]);
    if (Number.isSafeInteger(entrySize) && entrySize > size && isOwnEntry(rowMac, entry)) size = entrySize;
  }
  return size;
}

/**
 * Seals the rows of `store`'s organization from 1 to the size of `anchor` (or `upTo` past it, when an
 * operator adopts rows with `ledger reseal --adopt`), if the rows up to the anchor reproduce its root.
 * Returns how many rows were sealed now and the first number past the anchor holding a row without a
 * valid MAC (null: none).
 */
export async function sealCovered(store: TenantLedgerStore, rowMac: RowMac, anchor: LedgerCheckpointDoc | null, adopt = false): Promise<{ sealed: number; unsealedFrom: number | null; reproduced: boolean }> {
  const size = anchor?.size ?? 0;
  const leaves: Buffer[] = [];
  let pending: { _id: string; seq: number; mac: string }[] = [];
  const past: { _id: string; seq: number; mac: string }[] = [];
  let unsealedFrom: number | null = null;
  let sealed = 0;
  for await (const doc of store.eventsInOrder()) {
    if (doc.seq !== leaves.length + 1) break;
    const commit = leafCommitOfStored(doc);
    leaves.push(eventLeafHash(store.tenant, doc.seq, commit));
    if (isOwnStored(rowMac, doc, commit)) continue;
    const seal = { _id: doc._id, seq: doc.seq, mac: rowMacOf(rowMac, doc, commit) };
    if (doc.seq <= size) pending.push(seal);
    else {
      unsealedFrom ??= doc.seq;
      past.push(seal);
    }
  }
  const reproduced = !anchor || (leaves.length >= size && (await rootHash(nodesOf(leaves), size)).equals(Buffer.from(anchor.root, 'base64')));
  if (!reproduced) return { sealed: 0, unsealedFrom, reproduced };
  if (adopt) {
    pending = [...pending, ...past];
    unsealedFrom = null;
  }
  for (let at = 0; at < pending.length; at += SEAL_BATCH) {
    await store.sealRows(pending.slice(at, at + SEAL_BATCH));
    sealed += Math.min(SEAL_BATCH, pending.length - at);
  }
  return { sealed, unsealedFrom, reproduced };
}

/** The mark's MAC: only the key file's holder can say that every row was sealed. */
const markFields = (at: Date) => ['row_macs', at.getTime()];

/**
 * The upgrade pass: see the header. Throws UnsealedRowsError when rows past a signed checkpoint are left
 * in an organization no row of which carries a valid MAC yet (its upgrade). Where one does, the mark was
 * deleted or changed behind the service's back: such rows are foreign (named when met), not an earlier
 * version's, and the start goes on.
 */
export async function sealLegacyRows(ledger: LedgerStore, signer: Signer, now: Date, log: Logger): Promise<void> {
  const rowMac = RowMac.fromSigner(signer);
  const mark = await ledger.rowsSealed();
  if (mark && mark.at instanceof Date && rowMac.valid('state', markFields(mark.at), mark.mac)) return;
  const left: string[] = [];
  for (const tenant of await ledger.tenantsWithUnsealedRows()) {
    const store = ledger.forTenant(tenant);
    // Read before this pass seals anything: whether some row of the organization was sealed before it.
    const sealedBefore = await store.anySealedRow();
    const anchor = await newestSigned(store, signer);
    const { sealed, unsealedFrom, reproduced } = await sealCovered(store, rowMac, anchor);
    if (!reproduced) {
      // Its log halts on its own (the audit names what changed): nothing of it is sealed.
      log.error({ tenant, checkpoint: anchor?.size }, 'upgrade: the stored events do not reproduce the newest signed checkpoint: none of them was sealed (run `ledger audit`)');
      continue;
    }
    if (sealed > 0) log.warn({ tenant, sealed, checkpoint: anchor?.size ?? 0 }, 'upgrade: rows of an earlier version, covered by a signed checkpoint, sealed with their MACs');
    // An organization some of whose rows this key sealed before is past its upgrade: rows without a MAC
    // past its checkpoint were written behind the service's back (the mark was deleted too), not left by an
    // earlier version. They are foreign: named when met, and the start goes on.
    if (unsealedFrom !== null && sealedBefore && isOwnStored(rowMac, sealedBefore)) {
      log.error({ tenant, from: unsealedFrom }, 'rows without a MAC past the newest signed checkpoint of an organization whose rows were sealed before: foreign (written behind the service\'s back), never an earlier version\'s (run `ledger audit`)');
    } else if (unsealedFrom !== null) left.push(`${tenant} (from sequence number ${unsealedFrom}; newest signed checkpoint ${anchor?.size ?? 'none'})`);
  }
  if (left.length > 0) {
    throw new UnsealedRowsError(
      `Rows without a MAC that no signed checkpoint covers were found in ${left.join(', ')}: written by an earlier version just before it stopped, or into the database by someone else. ` +
        'This version cannot tell which, so it will not sign or serve them as they are. ' +
        'Check them (`npx audit-ledger ledger audit --org ORG`), then either seal them as they are with `npx audit-ledger ledger reseal --org ORG --adopt` ' +
        'or move them into the foreign_rows collection with `npx audit-ledger ledger reseal --org ORG --set-aside`, and start again.',
    );
  }
  await ledger.markRowsSealed(now, rowMac.of('state', markFields(now)));
}
