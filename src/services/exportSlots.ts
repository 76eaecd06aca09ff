/**
 * How many exports each organization may run at once, across the installation. An export holds a
 * database cursor and a connection for as long as its client reads, so without a bound one organization
 * could take them all. A slot is a lease in the database (src/db/exportLeaseStore.ts): one insert to
 * take it and one delete to give it back per export, never per request; the lease runs out on its own
 * once the export's time limit has passed, so a crashed instance's slots come back.
 */
import { randomUUID } from 'node:crypto';
import { AppError } from '../domain/errors';
import type { Clock } from '../domain/time';
import type { ExportLeaseStore } from '../db/exportLeaseStore';

/** Seconds a refused export is asked to wait: about what a small export takes. */
const RETRY_AFTER_S = 5;
/** How long past the export's own time limit its lease lasts. */
const LEASE_MARGIN_MS = 60_000;

export class ExportSlots {
  /** Slots given back here whose lease is still being deleted, by organization: a new export here waits for them. */
  private readonly giving = new Map<string, Set<Promise<void>>>();

  constructor(
    private readonly perOrg: number,
    private readonly exportTimeoutMs: number,
    private readonly leases: ExportLeaseStore,
    private readonly clock: Clock,
  ) {}

  /** Takes a slot for the organization, or throws 429; the returned function gives it back (once). */
  async acquire(tenant: string): Promise<() => void> {
    const giving = this.giving.get(tenant);
    if (giving) await Promise.all(giving);
    const holder = randomUUID();
    const now = this.clock.now();
    const expires = new Date(now.getTime() + this.exportTimeoutMs + LEASE_MARGIN_MS);
    for (let slot = 0; slot < this.perOrg; slot++) {
      if (!(await this.leases.take(tenant, slot, holder, now, expires))) continue;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        // A lease that cannot be deleted runs out by itself.
        const given = this.leases.give(tenant, slot, holder).catch(() => undefined);
        const set = this.giving.get(tenant) ?? new Set<Promise<void>>();
        set.add(given);
        this.giving.set(tenant, set);
        void given.then(() => {
          set.delete(given);
          if (set.size === 0 && this.giving.get(tenant) === set) this.giving.delete(tenant);
        });
      };
    }
    throw new AppError('TOO_MANY_EXPORTS', `At most ${this.perOrg} exports may run at once for an organization; retry when one has finished`, { retryAfter: RETRY_AFTER_S });
  }
}
