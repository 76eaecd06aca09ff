/**
 * Streams' secrets at rest: AES-256-GCM with a key derived (HKDF) from the ledger signing key, which
 * every instance of an installation holds as a file and which is never in the database. Someone who can
 * read the database reads no token; someone who can write it cannot make a stream deliver to a
 * destination with a secret of their choosing that the service would accept as sealed by itself. Each
 * sealed value is bound to its stream's id (the GCM associated data), so it cannot be moved to another.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { keyDerivedFrom, type Signer } from '../domain/ledger/note';

const VERSION = 'v1';

export class SecretBox {
  private constructor(private readonly key: Buffer | null) {}

  static fromSigner(signer: Signer | null): SecretBox {
    if (!signer) return new SecretBox(null);
    return new SecretBox(keyDerivedFrom(signer, 'audit-ledger stream secrets v1'));
  }

  private need(): Buffer {
    if (!this.key) throw new Error('this process has no ledger signing key: stream secrets can be neither sealed nor opened');
    return this.key;
  }

  seal(streamId: string, secrets: Record<string, string>): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.need(), iv);
    cipher.setAAD(Buffer.from(streamId));
    const data = Buffer.concat([cipher.update(JSON.stringify(secrets), 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64'), cipher.getAuthTag().toString('base64'), data.toString('base64')].join('.');
  }

  open(streamId: string, sealed: string): Record<string, string> {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || data === undefined) throw new Error('a stream\'s sealed secrets are not in a known form');
    const decipher = createDecipheriv('aes-256-gcm', this.need(), Buffer.from(iv, 'base64'));
    decipher.setAAD(Buffer.from(streamId));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    const text = Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
    return JSON.parse(text) as Record<string, string>;
  }
}
