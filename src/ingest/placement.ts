/**
 * Where a round's events go, decided without the database: each unit of a tenant after the one before,
 * at consecutive sequence numbers, in the month of receipt, and within the tenant's monthly cap. Pure,
 * so the rules (gapless numbering, months that never go backwards, the cap counted exactly, a cap
 * exemption honoured) are tested on their own (test/unit/placement.test.ts).
 */

/** Where a tenant's newest placed event is: its sequence number, its month of receipt and its place in that month. */
export interface Position {
  seq: number;
  month: string;
  monthSeq: number;
}

/** A tenant with no events yet. */
export const NO_EVENTS: Position = { seq: 0, month: '', monthSeq: 0 };

export interface Placeable {
  tenant: string;
  /** How many of its events still need a place. */
  events: number;
  capExempt: boolean;
  /**
   * Whether its events count against the cap (false: the service's own records, services/selfAudit.ts).
   * Uncounted events take sequence numbers but leave the month's count (`monthSeq`) where it was: each
   * of them carries the count of counted events before it. Default true.
   */
  counted?: boolean;
}

/** A unit's outcome: placed from `first` on (its events at first.seq, first.seq + 1, …), or refused for its tenant's cap in `month`. */
export type Placement = { first: Position; capped?: undefined } | { capped: true; month: string };

/**
 * Places `units` in order. `newest`: each tenant's newest stored event; `cap`: its monthly cap;
 * `month`: the month of receipt now. A month never goes backwards along a tenant's sequence, even if this
 * process's clock lags another's. Returns each unit's placement and each tenant's newest position after them.
 */
export function place(
  units: readonly Placeable[],
  newest: (tenant: string) => Position,
  cap: (tenant: string) => number,
  month: string,
): { placements: Placement[]; newest: Map<string, Position> } {
  const after = new Map<string, Position>();
  const placements = units.map((unit): Placement => {
    const last = after.get(unit.tenant) ?? newest(unit.tenant);
    const unitMonth = last.month > month ? last.month : month;
    const before = last.month === unitMonth ? last.monthSeq : 0;
    if (unit.counted === false) {
      after.set(unit.tenant, { seq: last.seq + unit.events, month: unitMonth, monthSeq: before });
      return { first: { seq: last.seq + 1, month: unitMonth, monthSeq: before } };
    }
    const firstMonthSeq = before + 1;
    if (!unit.capExempt && firstMonthSeq + unit.events - 1 > cap(unit.tenant)) return { capped: true, month: unitMonth };
    after.set(unit.tenant, { seq: last.seq + unit.events, month: unitMonth, monthSeq: firstMonthSeq + unit.events - 1 });
    return { first: { seq: last.seq + 1, month: unitMonth, monthSeq: firstMonthSeq } };
  });
  return { placements, newest: after };
}
