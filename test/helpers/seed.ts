/**
 * Bulk fixtures: stores many events straight through the driver, numbered and sealed (row MACs, with the
 * test apps' key) like the writer numbers and seals them, for suites that need volume (export memory,
 * disconnects) rather than the ingest path. No checkpoint covers them: an operator's reseal signs them.
 */
import { v7 as uuidv7 } from 'uuid';
import { type EventDoc, leafCommitOfDoc } from '../../src/db/documents';
import { eventMac } from '../../src/db/rowMacs';
import { RowMac } from '../../src/domain/ledger/rowMac';
import { TEST_LEDGER_SIGNER, type TestApp, type TestOrg } from './harness';

const rowMac = RowMac.fromSigner(TEST_LEDGER_SIGNER);

export async function seedEvents(app: TestApp, org: TestOrg, count: number, make: (i: number) => Partial<EventDoc> = () => ({})): Promise<void> {
  const events = app.collections.events;
  const last = await events.findOne({ tenant: org.id }, { sort: { seq: -1 } });
  let seq = last?.seq ?? 0;
  const base = Date.UTC(2024, 0, 1);
  for (let start = 0; start < count; start += 2000) {
    const docs: EventDoc[] = [];
    for (let i = start; i < Math.min(count, start + 2000); i++) {
      seq++;
      docs.push({
        _id: uuidv7(),
        tenant: org.id,
        seq,
        month: '2024-01',
        month_seq: seq,
        ts: new Date(base + i * 1000),
        received_at: new Date(),
        actor_id: `actor_${i % 100}`,
        actor_name: `Actor ${i % 100}`,
        actor_email: `actor${i % 100}@example.com`,
        action: i % 2 ? 'invoice.updated' : 'invoice.created',
        resource_type: 'invoice',
        resource_id: `inv_${i}`,
        resource_name: `Invoice ${i}`,
        metadata: JSON.stringify({ field: 'amount', old_value: i, new_value: i + 1, ip: '203.0.113.7', note: 'x'.repeat(200) }),
        organization_id: org.id,
        api_key_id: org.keyId,
        ...make(i),
      });
    }
    for (const doc of docs) doc.mac = eventMac(rowMac, doc, leafCommitOfDoc(doc));
    await events.insertMany(docs, { ordered: false });
  }
}
