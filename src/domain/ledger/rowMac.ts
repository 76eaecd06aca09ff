/**
 * Rows authenticated at rest. Every row the service will sign, deliver, prove or take as authority
 * (an event, a tombstone, an installation-log entry, an admin CLI's outbox record) carries a MAC over
 * what gives it its meaning, keyed by a key derived from the signing key file (`keyDerivedFrom`): the
 * database never holds the key, so someone who can write the database but not read the key file cannot
 * make a row the service takes for its own. A row without a valid MAC is *foreign*: never signed,
 * delivered or counted, and named where it is met (docs/trust-model.md, "The database is not trusted").
 *
 * The MAC binds the row's kind, so a MAC of one kind never stands for another, and every field given,
 * JSON-encoded as one array (unambiguous, whatever the fields hold). Copying a genuine row to another
 * organization, another sequence number or index, or another id, gives a foreign row.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { keyDerivedFrom, type Signer } from './note';

/** The kinds of authenticated rows: a MAC of one kind is never valid for another. */
export type RowKind = 'event' | 'tombstone' | 'entry' | 'outbox' | 'state';

/** What a MAC covers: the row's meaningful fields, in a fixed order per kind. */
export type RowFields = readonly (string | number | boolean | null)[];

const PURPOSE = 'audit-ledger/row-mac/v1';
const MAC_BYTES = 32;

export class RowMac {
  private constructor(private readonly key: Buffer) {}

  /** The installation's row key, derived from its signing key (every instance sharing the key file has it). */
  static fromSigner(signer: Signer): RowMac {
    return new RowMac(keyDerivedFrom(signer, PURPOSE));
  }

  /** The MAC of a row of `kind` with these fields: base64 of HMAC-SHA256. */
  of(kind: RowKind, fields: RowFields): string {
    return createHmac('sha256', this.key).update(JSON.stringify([kind, ...fields])).digest('base64');
  }

  /** Whether `mac` (as read from the database: anything) is the MAC of this row; compared in constant time. */
  valid(kind: RowKind, fields: RowFields, mac: unknown): boolean {
    if (typeof mac !== 'string') return false;
    const given = Buffer.from(mac, 'base64');
    if (given.length !== MAC_BYTES) return false;
    return timingSafeEqual(given, Buffer.from(this.of(kind, fields), 'base64'));
  }
}
