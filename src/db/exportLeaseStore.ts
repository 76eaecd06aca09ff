/**
 * Export slots held across the installation: one document per slot of an organization
 * (`<tenant>/<slot>`), inserted to take it (the unique `_id` decides between instances) and deleted to
 * give it back; slot `retention` is the organization's retention work (prunes and erasures, one at a
 * time across the installation). A lease outlives a crashed instance only until its expiry, after which the next export
 * takes it over.
 */
import type { Collections } from './database';
import { DUPLICATE_KEY } from './errors';

export class ExportLeaseStore {
  constructor(private readonly c: Collections) {}

  /** Takes slot `slot` of `tenant` for `holder` until `expires`; false when another holds it and its lease runs. */
  async take(tenant: string, slot: number | 'retention', holder: string, now: Date, expires: Date): Promise<boolean> {
    const _id = `${tenant}/${slot}`;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await this.c.exportLeases.insertOne({ _id, holder, expires_at: expires });
        return true;
      } catch (error) {
        if ((error as { code?: number }).code !== DUPLICATE_KEY) throw error;
      }
      // Taken: by a running export, or by one whose instance died (its lease has run out: take it over).
      const held = await this.c.exportLeases.findOne({ _id });
      if (held && held.expires_at > now) return false;
      if (held) await this.c.exportLeases.deleteOne({ _id, holder: held.holder });
    }
    return false;
  }

  async give(tenant: string, slot: number | 'retention', holder: string): Promise<void> {
    await this.c.exportLeases.deleteOne({ _id: `${tenant}/${slot}`, holder });
  }
}
