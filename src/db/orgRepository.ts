/** Organizations: created by operators through the CLI; their plan decides the monthly cap. */
import type { Config } from '../config/env';
import type { Plan } from '../domain/plan';
import { newPublicId } from '../domain/apiKey';
import type { OrgDoc } from './documents';
import type { Collections } from './database';
import { mapLimited } from '../domain/limited';

export interface OrgView {
  id: string;
  name: string;
  plan: Plan;
  monthly_cap: number;
  created_at: string;
}

export class OrgRepository {
  constructor(
    private readonly c: Collections,
    private readonly planCaps: Config['planCaps'],
  ) {}

  /** The cap in force: the organization's own when set, else its plan's. */
  capOf(org: Pick<OrgDoc, 'plan' | 'monthly_cap'>): number {
    return org.monthly_cap ?? this.planCaps[org.plan];
  }

  view(org: OrgDoc): OrgView {
    return { id: org._id, name: org.name, plan: org.plan, monthly_cap: this.capOf(org), created_at: org.created_at.toISOString() };
  }

  async create(input: { name: string; plan: Plan; monthlyCap: number | null }, now: Date): Promise<OrgDoc> {
    const org: OrgDoc = { _id: newPublicId('org'), name: input.name, plan: input.plan, monthly_cap: input.monthlyCap, created_at: now };
    await this.c.orgs.insertOne(org);
    return org;
  }

  /** Undoes a sign-up whose account lost the race for its email. */
  async delete(id: string): Promise<void> {
    await this.c.orgs.deleteOne({ _id: id });
  }

  async get(id: string): Promise<OrgDoc | null> {
    return this.c.orgs.findOne({ _id: id });
  }

  /** Every organization's id (the background audit's round). */
  async ids(): Promise<string[]> {
    return (await this.c.orgs.find({}, { projection: { _id: 1 } }).toArray()).map((org) => org._id);
  }

  async list(): Promise<OrgDoc[]> {
    return this.c.orgs.find({}).sort({ created_at: 1, _id: 1 }).toArray();
  }

  /** Caps of several organizations (the writer's, at most once a second each): point reads, never an `$in` (see ApiKeyRepository.activeAmong). */
  async caps(ids: readonly string[]): Promise<Map<string, number>> {
    const orgs = await mapLimited(ids, 16, (id) => this.c.orgs.findOne({ _id: id }, { projection: { plan: 1, monthly_cap: 1 } }));
    return new Map(orgs.filter((org) => org !== null).map((org) => [org._id, this.capOf(org)]));
  }
}
