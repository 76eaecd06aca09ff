/**
 * How many exports each organization may run at once. An export holds a database cursor and a
 * connection for as long as its client reads, so without a bound one organization could take them all.
 * Counted per process: with N instances an organization may run N times as many.
 */
import { AppError } from '../domain/errors';

/** Seconds a refused export is asked to wait: about what a small export takes. */
const RETRY_AFTER_S = 5;

export class ExportSlots {
  private readonly running = new Map<string, number>();

  constructor(private readonly perOrg: number) {}

  /** Takes a slot for the organization, or throws 429; the returned function gives it back (once). */
  acquire(tenant: string): () => void {
    const count = this.running.get(tenant) ?? 0;
    if (count >= this.perOrg) {
      throw new AppError('TOO_MANY_EXPORTS', `At most ${this.perOrg} exports may run at once for an organization; retry when one has finished`, {
        retryAfter: RETRY_AFTER_S,
      });
    }
    this.running.set(tenant, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.running.get(tenant) ?? 1) - 1;
      if (left > 0) this.running.set(tenant, left);
      else this.running.delete(tenant);
    };
  }
}
