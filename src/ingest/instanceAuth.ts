/**
 * How the instances of one installation know each other: HMAC-SHA256 with a key derived (HKDF) from
 * the ledger signing key, which every instance of an installation shares as a file and which is never
 * in the database. Entries of the instance list carry a MAC of their id and address, forwards a MAC of
 * their body bound to the receiving instance, and answers a MAC bound to the request's: so someone who
 * can write the database can neither add an instance that others forward to, nor forward events, nor
 * answer for an instance.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { keyDerivedFrom, type Signer } from '../domain/ledger/note';

export class InstanceAuth {
  private constructor(private readonly key: Buffer) {}

  /** The installation's key, from its signing key. */
  static fromSigner(signer: Signer): InstanceAuth {
    return new InstanceAuth(keyDerivedFrom(signer, 'audit-ledger instances v1'));
  }

  /** A key nobody else holds: a process without the signing key (the admin CLI) forwards nothing. */
  static alone(): InstanceAuth {
    return new InstanceAuth(randomBytes(32));
  }

  /** The MAC (hex) of `parts`, each told apart from the next. */
  mac(...parts: string[]): string {
    const hmac = createHmac('sha256', this.key);
    for (const part of parts) hmac.update(`${Buffer.byteLength(part)}:`).update(part);
    return hmac.digest('hex');
  }

  check(mac: string | undefined, ...parts: string[]): boolean {
    if (!mac) return false;
    const given = Buffer.from(mac);
    const own = Buffer.from(this.mac(...parts));
    return given.length === own.length && timingSafeEqual(given, own);
  }
}
