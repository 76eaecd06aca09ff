/** The instance list: one document per running instance, written by its own heartbeat (src/ingest/instances.ts). */
import type { Collections } from './database';
import type { InstanceDoc } from './documents';

export class InstanceList {
  constructor(private readonly c: Pick<Collections, 'instances'>) {}

  async add(doc: InstanceDoc): Promise<void> {
    await this.c.instances.insertOne(doc);
  }

  /** Bumps this instance's heartbeat; false when its entry is gone (another instance forgot it). */
  async beat(id: string, beat: number): Promise<boolean> {
    const { matchedCount } = await this.c.instances.updateOne({ _id: id }, { $set: { beat } });
    return matchedCount > 0;
  }

  all(): Promise<InstanceDoc[]> {
    return this.c.instances.find({}).toArray();
  }

  async remove(ids: readonly string[]): Promise<void> {
    if (ids.length === 1) await this.c.instances.deleteOne({ _id: ids[0] });
    else if (ids.length > 1) await this.c.instances.deleteMany({ _id: { $in: [...ids] } });
  }
}
