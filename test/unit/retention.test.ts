/** The retention entries' reading (domain/retention.ts): ranges, the policy in force, and what each entry may cover. */
import { DAY_MS, policyAt, RETENTION_ACTIONS } from '../../src/domain/retention';
import { checkRetention, formatRanges, type LogEntry, parseRanges } from '../../src/client/retentionCheck';

const T0 = Date.UTC(2026, 0, 1);
const at = (days: number) => new Date(T0 + days * DAY_MS).toISOString();
let seq = 100;
const entry = (action: string, days: number, metadata: Record<string, unknown>, more: Partial<LogEntry> = {}): LogEntry => ({
  seq: ++seq, action, api_key_id: 'audit_ledger', timestamp: at(days), metadata: { actor_type: 'member', role: 'owner', ...metadata }, ...more,
});
const policy = (days: number, value: number | null, effective: number, previous: number | null = null) =>
  entry(RETENTION_ACTIONS.policyChanged, days, { days: value, previous_days: previous, effective_at: at(effective), notice_days: 7 });
const prune = (days: number, ranges: string, count: number, cutoffDay: number, policyDays: number) =>
  entry(RETENTION_ACTIONS.pruned, days, { ranges, count, cutoff: at(cutoffDay), policy_days: policyDays, held: 0 }, { metadata: { actor_type: 'service', ranges, count, cutoff: at(cutoffDay), policy_days: policyDays, held: 0 } });

test('ranges are written and read back, ascending and disjoint only', () => {
  expect(formatRanges([1, 2, 3, 5, 7, 8])).toBe('1-3,5,7-8');
  expect(parseRanges('1-3,5,7-8')).toEqual([[1, 3], [5, 5], [7, 8]]);
  for (const bad of ['3-1', '1-3,2', '0', '1,1', '5-9,9-12']) expect(parseRanges(bad)).toBeNull();
});

test('the policy in force: from its effective time, unless a later change was recorded before it took effect', () => {
  const changes = [
    { days: 365, effectiveAt: T0 + 7 * DAY_MS, recordedAt: T0 },
    { days: 30, effectiveAt: T0 + 17 * DAY_MS, recordedAt: T0 + 10 * DAY_MS },
    // Recorded during the 30 days' notice: the 30 never takes effect.
    { days: 90, effectiveAt: T0 + 22 * DAY_MS, recordedAt: T0 + 15 * DAY_MS },
  ];
  expect(policyAt(changes, T0 + 6 * DAY_MS)).toBeNull();
  expect(policyAt(changes, T0 + 18 * DAY_MS)?.days).toBe(365);
  expect(policyAt(changes, T0 + 23 * DAY_MS)?.days).toBe(90);
});

describe('checkRetention', () => {
  test('a prune under the policy in force covers its ranges, and nothing else', () => {
    seq = 100;
    const check = checkRetention([policy(0, 30, 7), prune(50, '1-40', 40, 20, 30)]);
    expect(check.problems).toEqual([]);
    expect(check.authority(1)).toEqual({ kind: 'pruned', by: 102 });
    expect(check.authority(40)).not.toBeNull();
    expect(check.authority(41)).toBeNull();
    expect(check.pruned).toBe(40);
  });

  test('a cutoff later than the policy allows, a claimed policy not in force, a prune with none: each fails and covers nothing', () => {
    seq = 100;
    const late = checkRetention([policy(0, 30, 7), prune(50, '1-40', 40, 30, 30)]);
    expect(late.problems).toEqual([expect.stringContaining('its cutoff 2026-01-31T00:00:00.000Z is later than the 30-day policy allows (2026-01-21T00:00:00.000Z)')]);
    expect(late.authority(1)).toBeNull();
    seq = 100;
    const other = checkRetention([policy(0, 365, 7), prune(50, '1-40', 40, 10, 30)]);
    expect(other.problems).toEqual([expect.stringContaining('claims a 30-day policy, but the policy in force was 365 days')]);
    seq = 100;
    const none = checkRetention([prune(50, '1-40', 40, 10, 30)]);
    expect(none.problems).toEqual([expect.stringContaining('prunes with no retention policy in force')]);
  });

  test('a shorter policy inside its notice period fails, a longer one may take effect at once', () => {
    seq = 100;
    const hasty = checkRetention([policy(0, 365, 7), policy(20, 30, 21, 365)]);
    expect(hasty.problems).toEqual([expect.stringContaining('shortens the policy to 30 days effective 2026-01-22T00:00:00.000Z, inside its 7-day notice period')]);
    seq = 100;
    expect(checkRetention([policy(0, 30, 7), policy(20, 365, 20, 30)]).problems).toEqual([]);
  });

  test('entries a client sent, erasures not by an owner, removals during a hold on everything, and ranges past the entry are no authority', () => {
    seq = 100;
    const check = checkRetention([
      entry(RETENTION_ACTIONS.erased, 1, { ranges: '1-2', count: 2, reason: 'data_subject_request', held: 0 }, { api_key_id: 'key_client' }),
      entry(RETENTION_ACTIONS.erased, 2, { ranges: '3', count: 1, reason: 'data_subject_request', held: 0, role: 'admin' }),
      entry(RETENTION_ACTIONS.holdPlaced, 3, { hold_id: 'hold_1', filter: {}, reason: 'court' }),
      entry(RETENTION_ACTIONS.erased, 4, { ranges: '4', count: 1, reason: 'data_subject_request', held: 0 }),
      entry(RETENTION_ACTIONS.holdReleased, 5, { hold_id: 'hold_1' }),
      entry(RETENTION_ACTIONS.erased, 6, { ranges: '5', count: 1, reason: 'data_subject_request', held: 0 }),
      entry(RETENTION_ACTIONS.erased, 7, { ranges: '6-500', count: 495, reason: 'data_subject_request', held: 0 }),
      entry(RETENTION_ACTIONS.erased, 8, { ranges: '7-8', count: 3, reason: 'data_subject_request', held: 0 }),
    ]);
    expect(check.problems).toEqual([
      expect.stringContaining('not made by an owner'),
      expect.stringContaining('erases while the whole organization is on legal hold'),
      expect.stringContaining('it claims events recorded after itself'),
      expect.stringContaining('its ranges hold 2 events, not the 3 it claims'),
    ]);
    expect([1, 2, 3, 4, 6, 7].map((s) => check.authority(s))).toEqual([null, null, null, null, null, null]);
    expect(check.authority(5)).toEqual({ kind: 'erased', by: 106 });
  });

  test('an erasure made with an API key is an authority when the key held retention:manage (which only an owner grants)', () => {
    seq = 100;
    const byKey = (scopes: unknown) => ({ actor_type: 'api_key', role: undefined, scopes, reason: 'data_subject_request', held: 0 });
    const check = checkRetention([
      entry(RETENTION_ACTIONS.erased, 1, { ...byKey(['events:read', 'retention:manage']), ranges: '1-2', count: 2 }),
      entry(RETENTION_ACTIONS.erased, 2, { ...byKey(['events:write', 'events:read', 'ledger:read']), ranges: '3', count: 1 }),
      entry(RETENTION_ACTIONS.erased, 3, { ...byKey(undefined), ranges: '4', count: 1 }),
    ]);
    expect(check.problems).toEqual([
      expect.stringContaining('at sequence number 102 (audit_ledger.retention.erased): not made by an owner, nor with an API key holding retention:manage'),
      expect.stringContaining('at sequence number 103 (audit_ledger.retention.erased): not made by an owner, nor with an API key holding retention:manage'),
    ]);
    expect([1, 2, 3, 4].map((s) => check.authority(s))).toEqual([{ kind: 'erased', by: 101 }, { kind: 'erased', by: 101 }, null, null]);
  });
});
