/** The ledger receipt of a write: its own module, since the event schemas include it. */
import { z } from 'zod';

/** The salt and commitment of a v2 leaf, wherever an event's hash is checked (receipts, proofs, sidecars, streams). */
export const receiptV2Fields = {
  event_commitment: z.string().optional().meta({
    description: 'v2 leaves: lowercase hex SHA-256("audit-ledger/event/v2\\n" ‖ salt ‖ RFC 8785 JSON of the event), what the leaf commits to; absent for v1 leaves',
  }),
  salt: z.string().optional().meta({ description: 'v2 leaves: the event\'s 32-byte salt, 64 lowercase hex digits; deleted with the event when it is pruned or erased' }),
};

/** Where an event is in the Merkle tree and what its leaf commits to. */
const placeAndHashFields = {
  leaf_index: z.number().int().meta({
    description: 'The event\'s position in the Merkle tree, counted from 0 as RFC 6962 and the C2SP formats do (proofs, tiles): seq − 1. People are shown seq',
  }),
  event_sha256: z.string().meta({ description: 'Lowercase hex SHA-256 of the RFC 8785 canonical JSON of the event as GET /v1/events/{id} returns it' }),
  ...receiptV2Fields,
};

/** The event's sequence number: the number people are shown (dashboard, CLI, README). */
export const ZSeq = z.number().int().min(1).meta({
  description: 'The event\'s sequence number in its organization\'s log, counted from 1 (the organization\'s own records, such as its creation and its first key, take the first numbers)',
});

/**
 * An event's receipt, as a write answers it and a stream delivers it (docs/streams.md): its sequence
 * number, its place in the tree and what the leaf commits to.
 */
export const ZLedgerReceipt = z.object({ seq: ZSeq, ...placeAndHashFields }).meta({ id: 'LedgerReceipt' });
export type TLedgerReceipt = z.infer<typeof ZLedgerReceipt>;
