/** Pure functions behind the dashboard: usage states, chart days, URL filters, field changes, redirects. */
import { fieldChangeOf } from '../../src/dashboard/lib/fieldChange';
import { EMPTY_FILTERS, filtersFromSearch, filtersToSearch, localInputToIso, toApiFilters } from '../../src/dashboard/lib/filters';
import { safeNext } from '../../src/dashboard/lib/safeNext';
import { chartDays, usageState } from '../../src/domain/usage';
import { ZEmail } from '../../src/domain/account';

describe('usageState', () => {
  it.each([
    [0, 10_000, 'ok'],
    [7_999, 10_000, 'ok'],
    [8_000, 10_000, 'warning'],
    [9_999, 10_000, 'warning'],
    [10_000, 10_000, 'exhausted'],
    [0, 0, 'exhausted'],
  ])('%i of %i is %s', (used, cap, state) => {
    expect(usageState(used, cap)).toBe(state);
  });
});

describe('chartDays', () => {
  it('gives 30 UTC midnights ending today, across a month and a leap day', () => {
    const days = chartDays(new Date('2028-03-15T23:59:59.999Z'));
    expect(days).toHaveLength(30);
    expect(days.at(-1)?.toISOString()).toBe('2028-03-15T00:00:00.000Z');
    expect(days[0]?.toISOString()).toBe('2028-02-15T00:00:00.000Z');
    expect(days.map((d) => d.toISOString().slice(0, 10))).toContain('2028-02-29');
  });
});

describe('explorer filters in the URL', () => {
  it('round-trips, leaving out what is empty', () => {
    const filters = { ...EMPTY_FILTERS, actor_id: ' alice ', range: '7d' as const };
    const search = filtersToSearch(filters);
    expect(search.toString()).toBe('actor_id=alice&range=7d');
    expect(filtersFromSearch(search)).toEqual({ ...filters, actor_id: 'alice' });
  });

  it('keeps a custom range as two instants and ignores them for presets', () => {
    const custom = { ...EMPTY_FILTERS, range: 'custom' as const, from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z' };
    expect(filtersFromSearch(filtersToSearch(custom))).toEqual(custom);
    expect(filtersToSearch({ ...custom, range: '24h' }).toString()).toBe('range=24h');
    // An old link with only from/to is a custom range; an unknown preset is "all time".
    expect(filtersFromSearch(new URLSearchParams('from=2026-11-01T00:00:00.000Z')).range).toBe('custom');
    expect(filtersFromSearch(new URLSearchParams('range=1y')).range).toBe('all');
  });

  it('resolves presets against now for the API', () => {
    const now = Date.parse('2026-11-22T12:00:00.000Z');
    expect(toApiFilters({ ...EMPTY_FILTERS, range: '24h', action: 'user.invited' }, now)).toEqual({ action: 'user.invited', start_date: '2026-11-21T12:00:00.000Z' });
    expect(toApiFilters({ ...EMPTY_FILTERS, range: 'custom', to: '2026-11-02T00:00:00.000Z' }, now)).toEqual({ end_date: '2026-11-02T00:00:00.000Z' });
    expect(toApiFilters(EMPTY_FILTERS, now)).toEqual({});
  });

  it('reads a picked end minute as the whole minute', () => {
    const end = new Date(localInputToIso('2026-11-02T10:30', 'end'));
    expect([end.getSeconds(), end.getMilliseconds(), end.getMinutes()]).toEqual([59, 999, 30]);
    expect(localInputToIso('', 'start')).toBe('');
    expect(localInputToIso('nonsense', 'start')).toBe('');
  });
});

describe('fieldChangeOf', () => {
  it('needs all three keys, and takes any JSON values', () => {
    expect(fieldChangeOf({ field: 'role', old_value: 'viewer', new_value: 'admin' })).toEqual({ field: 'role', oldValue: 'viewer', newValue: 'admin' });
    expect(fieldChangeOf({ field: 'limits', old_value: null, new_value: { seats: 5 } })).toEqual({ field: 'limits', oldValue: null, newValue: { seats: 5 } });
    expect(fieldChangeOf({ field: 'role', new_value: 'admin' })).toBeNull();
    expect(fieldChangeOf({})).toBeNull();
  });
});

describe('safeNext', () => {
  it.each([
    ['/events?actor_id=alice', '/events?actor_id=alice'],
    [null, '/'],
    ['', '/'],
    ['https://evil.example', '/'],
    ['//evil.example', '/'],
    ['/\\evil.example', '/'],
    ['/events\\..\\x', '/'],
  ])('%s → %s', (next, expected) => {
    expect(safeNext(next)).toBe(expected);
  });
});

describe('ZEmail', () => {
  it('trims and lower-cases, and refuses what is not an address', () => {
    expect(ZEmail.parse('  Jane.Doe@Example.COM ')).toBe('jane.doe@example.com');
    expect(ZEmail.safeParse('jane').success).toBe(false);
    expect(ZEmail.safeParse(`${'a'.repeat(250)}@x.io`).success).toBe(false);
  });
});
