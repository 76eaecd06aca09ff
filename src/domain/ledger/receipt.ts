/** The ledger receipt of a write: its own module, since the event schemas include it. */
import { z } from 'zod';

/** What a write answers for each event: where it is in the log and what the leaf commits to. */
export const ZLedgerReceipt = z
  .object({
    leaf_index: z.number().int().meta({ description: 'The event\'s leaf in its organization\'s log: its sequence number − 1' }),
    event_sha256: z.string().meta({ description: 'Lowercase hex SHA-256 of the RFC 8785 canonical JSON of the event as GET /v1/events/{id} returns it' }),
  })
  .meta({ id: 'LedgerReceipt' });
