/**
 * The verification client's pure checks (src/client/) on real logs built here with the ledger's own
 * formats: each passes on what the service would give, and names the failure once something is
 * tampered with. The CLI shells over them are tested end to end in test/ledger and test/streams.
 */
import type { TEvent } from '../../src/domain/event';
import { hashInputOfEvent } from '../../src/domain/eventFields';
import { cosign, cosignerFromSeed } from '../../src/domain/ledger/cosigner';
import { eventHashes, eventLeafHash, leafCommitOf } from '../../src/domain/ledger/eventHash';
import { type Checkpoint, checkpointText, parseCheckpoint, toBase64 } from '../../src/domain/ledger/formats';
import { consistencyProof, inclusionProof, leafHash, nodesOf, rootHash } from '../../src/domain/ledger/merkle';
import { openNote, signerFromSeed, signNote } from '../../src/domain/ledger/note';
import { entryBundle } from '../../src/domain/ledger/tilePaths';
import { checkpointBody, parsePolicy } from '../../src/domain/ledger/witnessFormats';
import { DAY_MS, RETENTION_ACTIONS } from '../../src/domain/retention';
import { SELF_AUDIT_KEY_ID } from '../../src/domain/selfAudit';
import {
  checkDelivery, checkExport, checkQuorum, checkRemembered, checkWitnessed, firstMonitorState, monitorLog, type MonitorSource, type TProofsSidecar, type Verdicts, verdictList,
} from '../../src/client';

const LEDGER = 'ledger.example';
const ORG = 'org_client';
const signer = signerFromSeed(LEDGER, Buffer.alloc(32, 3));
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const salt = (n: number) => n.toString(16).padStart(64, '0');

function event(n: number, more: Partial<TEvent> = {}): TEvent {
  return {
    id: `0190c8e4-0000-7000-8000-${String(n).padStart(12, '0')}`, timestamp: new Date(T0 + n * DAY_MS).toISOString(),
    actor_id: 'alice', actor_name: null, actor_email: null, action: 'doc.read', resource_type: 'doc', resource_id: `d${n}`, resource_name: null,
    metadata: {}, organization_id: ORG, api_key_id: 'key_1', ...more,
  };
}

/** A log of `events` (event i at sequence number i + 1) and its signed checkpoint of `size` (default: all). */
async function logOf(events: readonly TEvent[], size = events.length) {
  const leaves = events.map((e, i) => eventLeafHash(ORG, i + 1, leafCommitOf(eventHashes(hashInputOfEvent(e), salt(i + 1)))));
  const nodes = nodesOf(leaves);
  const checkpointAt = async (n: number) => {
    const checkpoint: Checkpoint = { origin: `${LEDGER}/${ORG}`, size: n, root: await rootHash(nodes, n) };
    return { checkpoint, note: signNote(checkpointText(checkpoint), signer) };
  };
  const { checkpoint, note } = await checkpointAt(size);
  const sidecar: TProofsSidecar = {
    checkpoint: note, tree_size: size, filters: {},
    proofs: await Promise.all(events.slice(0, size).map(async (e, i) => ({ event_id: e.id, leaf_index: i, salt: salt(i + 1), inclusion_path: (await inclusionProof(nodes, i, size)).map(toBase64) }))),
  };
  return { checkpoint, note, sidecar, nodes, checkpointAt };
}

/** An export as the service writes it: newest first. */
const exported = (events: readonly TEvent[]) => [...events].reverse();
const failuresOf = (verdicts: Verdicts) => verdicts.failures();

describe('checkExport', () => {
  test('a whole export passes; an edited event is named as not its signed leaf', async () => {
    const events = [event(1), event(2), event(3)];
    const { sidecar } = await logOf(events);
    const good = verdictList();
    expect(checkExport(signer, sidecar, exported(events), good.record).checkpoint?.size).toBe(3);
    expect(failuresOf(good)).toEqual([]);
    expect(good.verdicts.map((v) => v.check)).toContain('the export holds every event of the signed tree: sequence numbers 1 to 3, each once');

    const edited = verdictList();
    checkExport(signer, sidecar, exported([events[0] as TEvent, event(2, { actor_id: 'mallory' }), events[2] as TEvent]), edited.record);
    expect(failuresOf(edited)).toEqual([
      `event ${events[1]?.id}: not sequence number 2 of the signed tree (changed, or moved from its place)`,
      '2 of 3 events are in the signed tree of 3',
    ]);
  });

  test('an event left out is missing without authority; another key\'s checkpoint stops the checks', async () => {
    const events = [event(1), event(2), event(3)];
    const { sidecar } = await logOf(events);
    const gone = verdictList();
    checkExport(signer, sidecar, exported([events[0] as TEvent, events[2] as TEvent]), gone.record);
    expect(failuresOf(gone)).toEqual([
      `event ${events[1]?.id}: proven in the sidecar but missing from the export (removed?)`,
      '2 of 2 events are in the signed tree of 3',
      'missing without authority: the export lacks the events at sequence numbers 2 of the signed tree of 3, and no valid prune or erasure entry covers them (deleted, or left out)',
    ]);

    const other = verdictList();
    const found = checkExport(signerFromSeed(LEDGER, Buffer.alloc(32, 4)), sidecar, exported(events), other.record);
    expect(found).toEqual({ checkpoint: null, treeSize: null, events: 3, proven: [] });
    expect(failuresOf(other)[0]).toMatch(/^checkpoint: not signed by ledger\.example: /);
  });

  test('an event pruned under a valid entry may be missing; the same entry from a client key is no authority', async () => {
    const policy = event(1, { action: RETENTION_ACTIONS.policyChanged, api_key_id: SELF_AUDIT_KEY_ID, metadata: { days: 30, previous_days: null, effective_at: new Date(T0 + 9 * DAY_MS).toISOString(), notice_days: 7 } });
    const prune = (apiKey: string) => event(60, {
      action: RETENTION_ACTIONS.pruned, api_key_id: apiKey, metadata: { ranges: '2', count: 1, cutoff: new Date(T0 + 20 * DAY_MS).toISOString(), policy_days: 30, held: 0 },
    });
    // The pruned event is gone from the export and from its proofs, as the service leaves them.
    const withoutPruned = async (events: readonly TEvent[]) => {
      const { sidecar } = await logOf(events);
      return { sidecar: { ...sidecar, proofs: sidecar.proofs.filter((p) => p.leaf_index !== 1) }, items: exported([events[0] as TEvent, events[2] as TEvent]) };
    };
    const valid = await withoutPruned([policy, event(2), prune(SELF_AUDIT_KEY_ID)]);
    const clean = verdictList();
    checkExport(signer, valid.sidecar, valid.items, clean.record);
    expect(failuresOf(clean)).toEqual([]);
    expect(clean.verdicts.map((v) => v.check)).toContain('1 events pruned under the retention policy and 0 erased on request, each covered by a later retention entry of the log');

    const forged = await withoutPruned([policy, event(2), prune('key_1')]);
    const client = verdictList();
    checkExport(signer, forged.sidecar, forged.items, client.record);
    expect(failuresOf(client)).toEqual([expect.stringMatching(/^missing without authority: the export lacks the events at sequence numbers 2 /)]);
  });

  test('a filtered export: an event the filters do not select is named, and completeness is not claimed', async () => {
    const events = [event(1), event(2, { actor_id: 'bob' })];
    const { sidecar } = await logOf(events);
    const filtered = verdictList();
    checkExport(signer, { ...sidecar, filters: { actor_id: 'alice' } }, exported(events), filtered.record);
    expect(failuresOf(filtered)).toEqual([`event ${events[1]?.id}: does not match the export's filters`]);
    expect(filtered.verdicts.some((v) => v.check.startsWith('the export holds every event'))).toBe(false);
  });
});

describe('checkRemembered', () => {
  test('the same checkpoint, a proven extension, a rewrite, and no way to fetch a proof', async () => {
    const events = [event(1), event(2), event(3), event(4)];
    const log = await logOf(events);
    const small = (await log.checkpointAt(2)).checkpoint;
    const proof = (from: number, to: number) => consistencyProof(log.nodes, from, to);

    const same = verdictList();
    expect(await checkRemembered(log.checkpoint, log.checkpoint, 'state.txt', null, same.record)).toBe(false);
    expect(same.verdicts).toEqual([{ ok: true, check: 'the checkpoint of 4 is the one remembered in state.txt' }]);

    const grown = verdictList();
    expect(await checkRemembered(small, log.checkpoint, 'state.txt', proof, grown.record)).toBe(true);
    expect(grown.verdicts).toEqual([{ ok: true, check: 'the log of 4 extends the one of 2 remembered before (nothing rewritten)' }]);

    const rewritten = await logOf([event(1), event(2, { action: 'doc.deleted' }), event(3), event(4)]);
    const fork = verdictList();
    expect(await checkRemembered(small, rewritten.checkpoint, 'state.txt', (from, to) => consistencyProof(rewritten.nodes, from, to), fork.record)).toBe(false);
    expect(failuresOf(fork)).toEqual(['the log of 4 extends the one of 2 remembered before (nothing rewritten)']);

    const sameSize = verdictList();
    await checkRemembered(log.checkpoint, rewritten.checkpoint, 'state.txt', null, sameSize.record);
    expect(failuresOf(sameSize)).toEqual(['the checkpoint of 4 is the one remembered in state.txt']);

    const offline = verdictList();
    expect(await checkRemembered(small, log.checkpoint, 'state.txt', null, offline.record)).toBe(false);
    expect(failuresOf(offline)).toEqual(['consistency with the remembered checkpoint of 2: needs --url and --key to fetch the proof']);
  });
});

describe('checkDelivery', () => {
  /** A stream's delivery of `events` as one file: each event with its receipt, then the checkpoints' lines. */
  const delivery = (events: readonly TEvent[], notes: readonly string[], at = 1) => [{
    name: 'batch.jsonl',
    lines: () => [
      ...events.map((e, i) => {
        const hashes = eventHashes(hashInputOfEvent(e), salt(i + at));
        return JSON.stringify({ event: e, receipt: { seq: i + at, leaf_index: i + at - 1, ...hashes, salt: salt(i + at) } });
      }),
      ...notes.map((note) => JSON.stringify({ audit_ledger_checkpoint: { note } })),
    ],
  }];

  test('a whole delivery reproduces its checkpoints; an event edited with its receipt is pinned between them', async () => {
    const events = [event(1), event(2), event(3)];
    const log = await logOf(events);
    const first = (await log.checkpointAt(1)).note;
    const good = await checkDelivery(signer, 'out', delivery(events, [first, log.note]));
    expect(good).toMatchObject({ ok: true, organization: ORG, events: 3, first_seq: 1, last_seq: 3, verified_size: 3, failures: [] });

    const edited = await checkDelivery(signer, 'out', delivery([events[0] as TEvent, event(2, { actor_id: 'mallory' }), events[2] as TEvent], [first, log.note]));
    expect(edited.failures).toEqual(['an event at sequence numbers 2–3 was edited: it does not match its signed leaf (the event 1 reproduces the signed checkpoint of size 1; the events 1–3 do not reproduce the signed checkpoint of size 3)']);
    expect(edited.verified_size).toBe(1);
  });

  test('a gap in the middle and a delivery short of the given checkpoint are named', async () => {
    const events = [event(1), event(2), event(3), event(4)];
    const log = await logOf(events);
    const three = (await log.checkpointAt(3)).note;
    const lines = delivery(events.slice(0, 3), [three])[0]?.lines() ?? [];
    const gap = await checkDelivery(signer, 'out', [{ name: 'batch.jsonl', lines: () => lines.filter((_, i) => i !== 1) }]);
    expect(gap.failures).toEqual(['event 2 is missing from the middle of the stream: 1 sequence number(s) between 1 and 3 were never delivered, and no retention entry removed them']);

    const short = await checkDelivery(signer, 'out', delivery(events.slice(0, 3), [three]), () => log.note);
    expect(short.failures).toEqual(['the delivery stops before the given checkpoint of size 4 (delivered up to sequence number 3): event 4 is missing from its end']);
  });
});

describe('monitorLog', () => {
  /** A service serving the organization checkpoint `orgNote` of `log`, in an installation log whose entries are `bodies`. */
  function service(orgNote: string, nodes: Parameters<typeof consistencyProof>[0], bodies: readonly string[]): MonitorSource {
    const installationNodes = nodesOf(bodies.map((body) => leafHash(body)));
    return {
      organizationCheckpoint: () => Promise.resolve(orgNote),
      consistency: async (from, to) => ({ proof: await consistencyProof(nodes, from, to), status: 200 }),
      installationCheckpoint: async () => signNote(checkpointText({ origin: `${LEDGER}/installation`, size: bodies.length, root: await rootHash(installationNodes, bodies.length) }), signer),
      entryBundle: (index, width) => Promise.resolve(entryBundle(bodies.slice(index * 256, index * 256 + width).map((body) => Buffer.from(body, 'utf8')))),
    };
  }

  test('a log that grew passes and is remembered; one served smaller afterwards is a rollback', async () => {
    const log = await logOf([event(1), event(2), event(3)]);
    const two = await log.checkpointAt(2);
    const firstRun = await monitorLog(service(two.note, log.nodes, [checkpointBody(two.note)]), signer, firstMonitorState(), null);
    expect(firstRun.summary.failures).toEqual([]);
    const state = firstRun.next;
    expect(state?.checkpoint?.size).toBe(2);
    if (!state) throw new Error('the first run remembered nothing');

    const grown = await monitorLog(service(log.note, log.nodes, [checkpointBody(two.note), checkpointBody(log.note)]), signer, state, null);
    expect(grown.summary).toMatchObject({ ok: true, installation_size: 2, organization_size: 3, checkpoints_seen: 1 });
    if (!grown.next) throw new Error('the second run remembered nothing');

    const rolledBack = await monitorLog(service(two.note, log.nodes, [checkpointBody(two.note), checkpointBody(log.note)]), signer, grown.next, null);
    expect(rolledBack.next).toBeNull();
    expect(rolledBack.summary.failures).toContain('the organization\'s checkpoint of 2 events is SMALLER than the one of 3 this monitor saw before: the log was ROLLED BACK');
  });
});

describe('witness policy', () => {
  test('the quorum is met by the witness\'s cosignature, and not without it; no installation inclusion is not witnessed', () => {
    const witness = cosignerFromSeed('witness.example/w', Buffer.alloc(32, 9));
    const policy = parsePolicy(`witness W ${witness.text}\nquorum W\n`);
    const tree = signNote(checkpointText({ origin: `${LEDGER}/installation`, size: 1, root: leafHash('entry') }), signer);
    const cosigned = `${tree}${cosign(checkpointBody(tree), witness, 1_700_000_000)}`;
    expect(parseCheckpoint(openNote(cosigned, signer)).size).toBe(1);

    const met = verdictList();
    expect(checkQuorum(cosigned, policy, met.record)).toEqual(['W']);
    expect(met.verdicts).toEqual([{ ok: true, check: 'cosigned by W: the policy\'s quorum (W) is met' }]);
    const unmet = verdictList();
    expect(checkQuorum(tree, policy, unmet.record)).toEqual([]);
    expect(failuresOf(unmet)).toEqual(['cosigned by no witness of the policy: the policy\'s quorum (W) is NOT met']);

    const none = verdictList();
    expect(checkWitnessed(policy, signer, tree, null, none.record)).toEqual([]);
    expect(failuresOf(none)).toEqual(['no installation checkpoint includes the checkpoint in the proofs: it is not witnessed (export again in a few seconds)']);
  });
});
