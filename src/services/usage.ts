/** This month's usage against the plan's cap, and events received per day: the dashboard's usage page. */
import { chartDays, nextDay, type TUsageSummary, usageState } from '../domain/usage';
import { type Clock, utcMonth } from '../domain/time';
import type { OrgRepository } from '../db/orgRepository';
import type { Principal } from './auth';
import type { EventService } from './events';

export class UsageService {
  constructor(
    private readonly events: EventService,
    private readonly orgs: OrgRepository,
    private readonly clock: Clock,
  ) {}

  async summary(principal: Principal): Promise<TUsageSummary> {
    const now = this.clock.now();
    const month = utcMonth(now);
    const reader = this.events.readerFor(principal);
    const days = chartDays(now);
    const [org, used, counts] = await Promise.all([
      this.orgs.get(principal.tenant),
      reader.receivedInMonth(month),
      // One count per day over the (tenant, received_at) index: no aggregation stage that FerretDB lacks.
      Promise.all(days.map((day) => reader.countReceived(day, nextDay(day)))),
    ]);
    const cap = org ? this.orgs.capOf(org) : 0;
    return {
      month,
      used,
      cap,
      state: usageState(used, cap),
      daily: days.map((day, i) => ({ date: day.toISOString().slice(0, 10), count: counts[i] ?? 0 })),
    };
  }
}
