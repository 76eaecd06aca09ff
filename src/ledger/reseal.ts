/**
 * The operator's way out of a halt (`ledger reseal`, and `ledger installation` for every organization):
 * a log signed again from its stored events. Runs on the command line, with a write side of its own
 * (resealSide), or on a running integrator's (LedgerIntegrator.reseal), whose installation log it
 * appends to like any other checkpoint.
 */
import type { Logger } from 'pino';
import { eventLeafHash } from '../domain/ledger/eventHash';
import { LedgerHalt } from '../domain/ledger/log';
import { nodesOf, rootHash } from '../domain/ledger/merkle';
import type { Signer } from '../domain/ledger/note';
import type { RowMac } from '../domain/ledger/rowMac';
import { tilesOf } from '../domain/ledger/tiles';
import type { Clock } from '../domain/time';
import { leafCommitOfStored, type LedgerCheckpointDoc, type StoredEvent } from '../db/documents';
import { type LedgerStore, tileDoc } from '../db/ledgerStore';
import { isOwnStored, rowMacOf } from '../db/rowMacs';
import { openWriteSide, type WriteSide } from './installationRollup';
import { writeContext } from './logState';
import { signCheckpoint, verifyCheckpoint } from './signedCheckpoint';

/** What a reseal did (a type, not an interface: the command line prints it as a JSON record): the checkpoint it extended (null: none), the size it signed, and the rows it dealt with. */
export type Resealed = { anchor: number | null; size: number; planted: number; adopted: number; setAside: number; foreignLeft: number };

/**
 * A write side for the command line's reseals, where no integrator runs: one for all the reseals of a
 * command, so that their checkpoints are appended to the installation log one after the other.
 */
export function resealSide(options: { store: LedgerStore; signer: Signer; clock: Clock; log: Logger }): WriteSide {
  return openWriteSide(writeContext({ ...options, name: options.signer.name }));
}

/**
 * Rebuilds `tenant`'s log tiles from its stored events and signs their tree, but only as an extension of
 * the newest checkpoint this key signed that can be found: the events must still give that checkpoint's
 * root, or nothing is written. Checkpoint documents this key did not sign are deleted. With no signed
 * checkpoint at all, the stored events are sealed as they are: that is the operator's decision, and it is
 * logged, and the new checkpoint is appended to the installation log like any other. Holds every leaf
 * hash in memory (32 bytes and a Buffer's overhead per event).
 */
export async function reseal(side: WriteSide, tenant: string, rows: { adopt?: boolean; setAside?: boolean } = {}): Promise<Resealed> {
  const { context, states, rollup } = side;
  const signer = context.signer;
  if (!signer) throw new Error('resealing needs the ledger signing key');
  const store = context.store.forTenant(tenant);
  let anchor: LedgerCheckpointDoc | null = null;
  const planted: string[] = [];
  for await (const doc of store.checkpointsNewestFirst()) {
    try {
      verifyCheckpoint(context.name, signer, tenant, doc);
      anchor = doc;
      break;
    } catch {
      planted.push(doc._id);
    }
  }
  // Every leaf from the events, or, for events pruned or erased, from their tombstones. Up to the anchor,
  // whatever their MACs (its root vouches for them, and they are sealed); past it, only the service's own
  // rows (db/rowMacs.ts), unless the operator adopts the others (`--adopt`: sealed as they are) or sets
  // them aside (`--set-aside`: moved into foreign_rows).
  const rowMac = context.rowMac as RowMac;
  const leaves: Buffer[] = [];
  const seals: { _id: string; seq: number; mac: string }[] = [];
  const foreignPast: StoredEvent[] = [];
  for await (const doc of store.eventsInOrder()) {
    if (doc.seq !== leaves.length + 1 + foreignPast.length) break;
    const commit = leafCommitOfStored(doc);
    const own = isOwnStored(rowMac, doc, commit);
    if (!own && doc.seq > (anchor?.size ?? 0) && !rows.adopt) {
      foreignPast.push(doc);
      continue;
    }
    if (foreignPast.length > 0) break;
    if (!own) seals.push({ _id: doc._id, seq: doc.seq, mac: rowMacOf(rowMac, doc, commit) });
    leaves.push(eventLeafHash(tenant, doc.seq, commit));
  }
  const size = leaves.length;
  if (anchor) {
    if (size < anchor.size) throw new LedgerHalt(`only events 1 to ${size} are stored in sequence, and the signed checkpoint of size ${anchor.size} needs every one of its events: restore them first`);
    if (!(await rootHash(nodesOf(leaves), anchor.size)).equals(Buffer.from(anchor.root, 'base64'))) {
      throw new LedgerHalt(`the stored events no longer give the root of the signed checkpoint of size ${anchor.size}: restore them first (\`ledger audit\` names them)`);
    }
  }
  if (size === 0) throw new LedgerHalt('the organization has no events to seal');
  const tiles = new Map<string, ReturnType<typeof tileDoc>>();
  for (const treeSize of [anchor?.size ?? 0, size]) for (const tile of tilesOf(leaves, treeSize)) tiles.set(tileDoc(tenant, tile)._id, tileDoc(tenant, tile));
  const root = await rootHash(nodesOf(leaves), size);
  const checkpoint = signCheckpoint(context.name, tenant, size, root, signer, context.clock.now());
  await store.replaceLog(planted, [...tiles.values()], checkpoint);
  await store.sealRows(seals);
  if (rows.setAside) for (const doc of foreignPast) await context.store.foreign.moveEventAside(doc, 'ledger reseal --set-aside');
  states.delete(tenant);
  // Like every checkpoint, it enters the installation log: a reseal is visible to the witnesses' and
  // the customers' monitors, whatever it sealed.
  rollup.add(checkpoint);
  await rollup.append();
  const adopted = rows.adopt ? seals.filter((seal) => seal.seq > (anchor?.size ?? 0)).length : 0;
  const setAside = rows.setAside ? foreignPast.length : 0;
  context.log.warn({ tenant, anchor: anchor?.size ?? null, size, planted: planted.length, sealed: seals.length, adopted, setAside }, 'ledger RESEALED by an operator from the stored events');
  return { anchor: anchor?.size ?? null, size, planted: planted.length, adopted, setAside, foreignLeft: foreignPast.length - setAside };
}
