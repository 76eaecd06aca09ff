/** The browser's localStorage, as the dashboard's ledger checks use it (`KeyValueStore`), in memory: for running those checks in Node. */
import type { KeyValueStore } from '../../src/dashboard/lib/ledgerTrust';

export class MemoryStore implements KeyValueStore {
  readonly values = new Map<string, string>();
  getItem(key: string) {
    return this.values.get(key) ?? null;
  }
  setItem(key: string, value: string) {
    this.values.set(key, value);
  }
}
