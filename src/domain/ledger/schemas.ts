/** The ledger's API shapes: defined once, for the router, openapi.json and the clients. */
import { z } from 'zod';
import { text } from '../text';

const base64Hash = z.string().meta({ description: 'A 32-byte SHA-256 hash, standard base64' });
const size = (what: string) => z.number({ error: 'must be a whole number' }).int('must be a whole number').min(0, 'must not be negative').meta({ description: what });

/** What a write answers for each event: where it is in the log and what the leaf commits to. */
export const ZLedgerReceipt = z
  .object({
    leaf_index: z.number().int().meta({ description: 'The event\'s leaf in its organization\'s log: its sequence number − 1' }),
    event_sha256: z.string().meta({ description: 'Lowercase hex SHA-256 of the RFC 8785 canonical JSON of the event as GET /v1/events/{id} returns it' }),
  })
  .meta({ id: 'LedgerReceipt' });
export type TLedgerReceipt = z.infer<typeof ZLedgerReceipt>;

export const ZLedgerKey = z.object({
  key_name: z.string().meta({ description: 'LEDGER_NAME: the signed notes\' key name' }),
  verifier_key: z.string().meta({ description: 'C2SP signed-note verifier key: <name>+<key id>+<base64(0x01 ‖ Ed25519 public key)>' }),
});

export const ZCheckpoint = z
  .object({
    origin: z.string().meta({ description: '<LEDGER_NAME>/<organization id>' }),
    tree_size: z.number().int(),
    root_hash: base64Hash,
    checkpoint: z.string().meta({ description: 'The C2SP tlog-checkpoint in a signed note, verbatim' }),
  })
  .meta({ id: 'LedgerCheckpoint' });
export type TCheckpoint = z.infer<typeof ZCheckpoint>;

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
    leaf: z.string().meta({ description: 'Base64 of the leaf bytes: the RFC 8785 JSON of {"event_sha256","org","seq","v":1}' }),
    inclusion_path: z.array(base64Hash).meta({ description: 'RFC 6962 audit path, from the leaf upwards' }),
    checkpoint: z.string().meta({ description: 'The signed checkpoint of tree_size' }),
  })
  .meta({ id: 'InclusionProof' });
export type TInclusionProof = z.infer<typeof ZInclusionProof>;

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
