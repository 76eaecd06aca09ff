/** The ledger receipt of a write: its own module, since the event schemas include it. */
import { z } from 'zod';

/** The salt and commitment of a v2 leaf, wherever an event's hash is checked (receipts, proofs, sidecars, streams). */
export const receiptV2Fields = {
  event_commitment: z.string().optional().meta({
    description: 'v2 leaves: lowercase hex SHA-256("audit-ledger/event/v2\\n" ‖ salt ‖ RFC 8785 JSON of the event), what the leaf commits to; absent for v1 leaves',
  }),
  salt: z.string().optional().meta({ description: 'v2 leaves: the event\'s 32-byte salt, 64 lowercase hex digits; deleted with the event when it is pruned or erased' }),
};

/** What a write answers for each event: where it is in the log and what the leaf commits to. */
export const ZLedgerReceipt = z
  .object({
    leaf_index: z.number().int().meta({ description: 'The event\'s leaf in its organization\'s log: its sequence number − 1' }),
    event_sha256: z.string().meta({ description: 'Lowercase hex SHA-256 of the RFC 8785 canonical JSON of the event as GET /v1/events/{id} returns it' }),
    ...receiptV2Fields,
  })
  .meta({ id: 'LedgerReceipt' });
export type TLedgerReceipt = z.infer<typeof ZLedgerReceipt>;
