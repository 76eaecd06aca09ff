/**
 * Tamper detection on the server: rebuilds every leaf from the stored events and compares the tree with
 * what was signed. The signed checkpoints are the anchor: the stored tiles are trusted only once they
 * reproduce the newest checkpoint's root (nobody can make other hashes do that), and then they say which
 * event each leaf held, so each difference is named: an event edited, deleted, inserted or moved.
 */
import type { Collections } from '../db/database';
import type { EventDoc } from '../db/documents';
import { parseCheckpoint, toBase64 } from '../domain/ledger/formats';
import { openNote, type Verifier } from '../domain/ledger/note';
import { nodesOf, rootHash } from '../domain/ledger/merkle';
import { eventHashOf, leafHashAt, leafHashOf } from './ledger';
import { TileReader, TILE_WIDTH } from './tiles';

/** How far from its signed place a moved event is looked for; one moved further is reported as an edit. */
const MOVE_WINDOW = 256;

export type FindingKind = 'edited' | 'deleted' | 'inserted' | 'moved' | 'tiles' | 'checkpoint' | 'gap';

export interface Finding {
  kind: FindingKind;
  /** Where in the log, when it is about one leaf. */
  leaf_index?: number;
  event_id?: string;
  detail: string;
}

export interface AuditReport {
  tenant: string;
  events: number;
  /** The newest checkpoint's size: what the audit could check against a signature. */
  checkpoint_size: number;
  checkpoints: number;
  findings: Finding[];
}

export async function auditLog(c: Collections, tenant: string, verifier: Verifier | null): Promise<AuditReport> {
  const findings: Finding[] = [];
  const docs: EventDoc[] = await c.events.find({ tenant }).sort({ seq: 1 }).toArray();
  const checkpoints = await c.ledgerCheckpoints.find({ tenant }).sort({ size: -1 }).toArray();
  const report = (size: number): AuditReport => ({ tenant, events: docs.length, checkpoint_size: size, checkpoints: checkpoints.length, findings });

  // Every checkpoint's signature, when the key is known, and its origin.
  for (const checkpoint of checkpoints) {
    if (!verifier) continue;
    try {
      const parsed = parseCheckpoint(openNote(checkpoint.note, verifier));
      if (parsed.size !== checkpoint.size || toBase64(parsed.root) !== checkpoint.root || !parsed.origin.endsWith(`/${tenant}`)) {
        findings.push({ kind: 'checkpoint', detail: `checkpoint ${checkpoint.size}: its stored size or root differs from what was signed` });
      }
    } catch (error) {
      findings.push({ kind: 'checkpoint', detail: `checkpoint ${checkpoint.size}: ${error instanceof Error ? error.message : String(error)}` });
    }
  }
  const newest = checkpoints[0];
  const size = newest?.size ?? 0;

  // The leaves the events give now, and whether the sequence is still whole.
  const bySeq = new Map(docs.map((doc) => [doc.seq, doc]));
  const hashes = new Map(docs.map((doc) => [doc.seq, leafHashOf(doc)]));
  const head = docs[docs.length - 1]?.seq ?? 0;
  for (let seq = size + 1; seq <= head; seq++) {
    if (!bySeq.has(seq)) findings.push({ kind: 'gap', leaf_index: seq - 1, detail: `no event at sequence number ${seq}, after the newest checkpoint` });
  }
  if (!newest) return report(0);

  // The signed leaves, from the tiles, once they give the signed root.
  const reader = new TileReader(c, tenant);
  let signed: Buffer[] = [];
  try {
    for (let tile = 0; tile * TILE_WIDTH < size; tile++) signed.push(...(await reader.tile(0, tile, Math.min(TILE_WIDTH, size - tile * TILE_WIDTH))));
    if (!(await rootHash(nodesOf(signed), size)).equals(Buffer.from(newest.root, 'base64'))) throw new Error('they do not give its root');
  } catch (error) {
    findings.push({ kind: 'tiles', detail: `the stored tiles cannot be checked against checkpoint ${size} (${error instanceof Error ? error.message : String(error)}): events can be checked only as a whole` });
    signed = [];
  }
  const now = Array.from({ length: size }, (_, i) => hashes.get(i + 1));
  if (signed.length === 0) {
    const whole = now.every((hash) => hash !== undefined) && (await rootHash(nodesOf(now), size)).equals(Buffer.from(newest.root, 'base64'));
    if (!whole) findings.push({ kind: 'edited', detail: `the events 1 to ${size} no longer give the root of checkpoint ${size}` });
    return report(size);
  }

  // Each difference, named. A leaf commits to its position, so an event is looked for at the leaves
  // around where it sits now (MOVE_WINDOW either way): found, it was moved. A leaf whose event is not
  // the one signed there holds an event that was moved, or one never signed: inserted if the signed
  // event is found elsewhere (pushed aside), edited if not. A signed leaf whose event is found nowhere,
  // and not explained by an edit in its place, lost its event: deleted.
  const differs = (i: number) => !now[i]?.equals(signed[i] as Buffer);
  const movedFrom = new Map<number, number>();
  const found = new Set<number>();
  for (let i = 0; i < size; i++) {
    const doc = bySeq.get(i + 1);
    if (!differs(i)) found.add(i);
    if (!doc || !differs(i)) continue;
    const hash = eventHashOf(doc);
    for (let j = Math.max(0, i - MOVE_WINDOW); j < Math.min(size, i + MOVE_WINDOW + 1); j++) {
      if (j !== i && leafHashAt(tenant, j + 1, hash).equals(signed[j] as Buffer)) {
        movedFrom.set(i, j);
        found.add(j);
        break;
      }
    }
  }
  const editedAt = new Set<number>();
  for (let i = 0; i < size; i++) {
    const doc = bySeq.get(i + 1);
    if (!doc || !differs(i)) continue;
    const from = movedFrom.get(i);
    if (from !== undefined) {
      findings.push({ kind: 'moved', leaf_index: i, event_id: doc._id, detail: `event ${doc._id} was signed at leaf ${from} and now sits at leaf ${i}` });
    } else if (found.has(i)) {
      findings.push({ kind: 'inserted', leaf_index: i, event_id: doc._id, detail: `event ${doc._id} was never signed: it was inserted at leaf ${i}` });
    } else {
      editedAt.add(i);
      findings.push({ kind: 'edited', leaf_index: i, event_id: doc._id, detail: `event ${doc._id} at leaf ${i} is not the event that was signed there: edited` });
    }
  }
  for (let i = 0; i < size; i++) {
    if (!found.has(i) && !editedAt.has(i)) findings.push({ kind: 'deleted', leaf_index: i, detail: `leaf ${i}: the event signed there is gone` });
  }
  return report(size);
}
