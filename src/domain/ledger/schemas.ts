/** The ledger's API shapes: defined once, for the router, openapi.json and the clients (the write receipt: `./receipt.ts`). */
import { z } from 'zod';
import { wrongType, ZEventFilters, ZTreeSizeParam } from '../event';
import { text } from '../text';
import { receiptV2Fields } from './receipt';

const base64Hash = z.string().meta({ description: 'A 32-byte SHA-256 hash, standard base64' });
const size = (what: string) => z.number(wrongType('must be a whole number')).int().min(0).meta({ description: what });

export const ZLedgerKey = z.object({
  key_name: z.string().meta({ description: 'LEDGER_NAME: the signed notes\' key name' }),
  verifier_key: z.string().meta({ description: 'C2SP signed-note verifier key: <name>+<key id>+<base64(0x01 ‖ Ed25519 public key)>' }),
});

/**
 * Where an organization checkpoint is in the installation log: the installation checkpoint (its note with
 * the witnesses' cosignatures), and the inclusion proof of the organization checkpoint's body in it.
 */
export const ZInstallationInclusion = z
  .object({
    origin: z.string().meta({ description: '<LEDGER_NAME>/installation' }),
    tree_size: z.number().int(),
    root_hash: base64Hash,
    checkpoint: z.string().meta({ description: 'The installation checkpoint in a signed note, followed by every verified cosignature/v1 line of the witnesses' }),
    witnessed: z.boolean().meta({ description: 'Whether its cosignatures meet the quorum of the installation\'s witness policy' }),
    entry_index: z.number().int().meta({ description: 'The organization checkpoint\'s index in the installation log' }),
    entry: z.string().meta({ description: 'The entry: the organization checkpoint\'s body (origin, size and root lines)' }),
    inclusion_path: z.array(base64Hash).meta({ description: 'RFC 6962 audit path of the entry in the installation tree' }),
  })
  .meta({ id: 'InstallationInclusion' });
export type TInstallationInclusion = z.infer<typeof ZInstallationInclusion>;

export const ZCheckpoint = z
  .object({
    origin: z.string().meta({ description: '<LEDGER_NAME>/<organization id>' }),
    tree_size: z.number().int(),
    root_hash: base64Hash,
    checkpoint: z.string().meta({ description: 'The C2SP tlog-checkpoint in a signed note, verbatim' }),
    installation: ZInstallationInclusion.nullable().optional().meta({
      description: 'The installation checkpoint that includes this checkpoint (the newest witnessed one where there is one), with the proof; null until one does',
    }),
    witnessed_tree_size: z.number().int().nullable().optional().meta({ description: 'The size of the newest installation checkpoint whose cosignatures meet the quorum (null: none, or no witnesses)' }),
  })
  .meta({ id: 'LedgerCheckpoint' });
export type TCheckpoint = z.infer<typeof ZCheckpoint>;

export const ZCheckpointInput = z.strictObject({
  installation_size: size('The size of an installation checkpoint to prove this checkpoint\'s inclusion in; default: the newest witnessed one, else the newest').optional(),
});

/** One witness of the installation's policy, as the service knows it. */
export const ZWitnessStatus = z
  .object({
    name: z.string(),
    verifier_key: z.string(),
    url: z.string().nullable(),
    cosigned_size: z.number().int().meta({ description: 'The newest installation checkpoint it cosigned (0: none yet)' }),
    error: z.string().nullable().meta({ description: 'Why its last submission was not cosigned (404, 403, unreachable, ...)' }),
    alarm: z.string().nullable().meta({ description: 'Set when it holds a history this log does not extend: nothing more is signed for the installation log' }),
  })
  .meta({ id: 'WitnessStatus' });

export const ZProofInput = z.object({
  id: text(),
  tree_size: size('The size of a checkpoint the service signed; default: the newest that includes the event').optional(),
});

export const ZInclusionProof = z
  .object({
    event_id: z.string(),
    leaf_index: z.number().int(),
    tree_size: z.number().int(),
    event_sha256: z.string(),
    ...receiptV2Fields,
    leaf: z.string().meta({ description: 'Base64 of the leaf bytes: the RFC 8785 JSON of {"event_sha256","org","seq","v":1} or {"event_commitment","org","seq","v":2}' }),
    inclusion_path: z.array(base64Hash).meta({ description: 'RFC 6962 audit path, from the leaf upwards' }),
    checkpoint: z.string().meta({ description: 'The signed checkpoint of tree_size' }),
  })
  .meta({ id: 'InclusionProof' });
export type TInclusionProof = z.infer<typeof ZInclusionProof>;

/** GET /v1/ledger/proofs: the export's filters, and the checkpoint to prove against (query strings). */
export const ZProofsQuery = ZEventFilters.extend({
  tree_size: ZTreeSizeParam.optional().meta({ description: 'The size of a checkpoint the service signed; default: the newest, once it includes every event stored when the request came' }),
});

/** One event's entry in the proofs sidecar. */
export const ZSidecarProof = z.object({ event_id: z.string(), leaf_index: z.number().int(), salt: receiptV2Fields.salt, inclusion_path: z.array(base64Hash) });
export type TSidecarProof = z.infer<typeof ZSidecarProof>;

/**
 * The proofs sidecar of an export: one checkpoint, the filters it was made with (none: the whole log up
 * to the checkpoint, which a verifier can then check for completeness), and every exported event's
 * inclusion path in the checkpoint's tree.
 */
export const ZProofsSidecar = z
  .object({
    checkpoint: z.string(),
    tree_size: z.number().int(),
    filters: z.record(z.string(), z.string()).meta({ description: 'The export filters the sidecar was made with, as given; {} for the whole log' }),
    proofs: z.array(ZSidecarProof),
    installation: ZInstallationInclusion.nullable().optional().meta({ description: 'The checkpoint\'s inclusion in the installation log, witnessed where possible' }),
  })
  .meta({ id: 'ProofsSidecar' });

/** The dashboard's ledger page: the key to pin, and the organization's newest checkpoint (null: no events yet). */
export const ZLedgerSummary = ZLedgerKey.extend({
  checkpoint: ZCheckpoint.extend({ signed_at: z.string().meta({ description: 'When it was signed (ISO 8601)' }) }).nullable(),
  witnesses: z.array(ZWitnessStatus),
  quorum: z.string().nullable().meta({ description: 'The policy\'s quorum (a witness or group name, or none); null: no witness policy' }),
});
export type TLedgerSummary = z.infer<typeof ZLedgerSummary>;

export const ZConsistencyInput = z.strictObject({
  from: size('The size of the older tree (a checkpoint you hold)'),
  to: size('The size of a checkpoint the service signed; default: the newest').optional(),
});

export const ZConsistencyProof = z
  .object({
    from: z.number().int(),
    to: z.number().int(),
    proof: z.array(base64Hash).meta({ description: 'RFC 6962 consistency proof from `from` to `to`' }),
    checkpoint: z.string().meta({ description: 'The signed checkpoint of size `to`' }),
  })
  .meta({ id: 'ConsistencyProof' });
export type TConsistencyProof = z.infer<typeof ZConsistencyProof>;
