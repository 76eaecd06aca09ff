/**
 * What both sides of the ledger share: the write side that signs the logs (ledger/integrator.ts) and the
 * sides that read, audit and witness them. Names and errors only, no I/O.
 */

/**
 * The installation log's tenant: its entries are the organizations' checkpoint bodies, its origin
 * `<name>/installation`. Organization ids begin with `org_`, so no organization has this one.
 */
export const INSTALLATION = 'installation';

/** The origin line of `tenant`'s log in an installation whose ledger is called `name`. */
export function logOrigin(name: string, tenant: string): string {
  return `${name}/${tenant}`;
}

/**
 * The ledger state of an organization cannot be trusted, so nothing more is signed for it: a stored
 * checkpoint that this installation's key did not sign, tiles that do not give a signed root, a stored
 * checkpoint with another root than the stored events give, or events that no signed checkpoint covers
 * and that this instance did not store itself (the ledger state was deleted, or the events written behind
 * the service's back). Only an operator's `ledger reseal` starts it again.
 */
export class LedgerHalt extends Error {
  override readonly name = 'LedgerHalt';
}

/** Another instance signed further than this one loaded: not a failure, the next round loads its tree. */
export class LogBehind extends Error {
  override readonly name = 'LogBehind';
}
