/**
 * The events explorer's filters as they live in the URL, so a filtered view can be shared and survives
 * a reload. Presets are stored by name (`range=7d`) and resolved when the page loads; a custom range is
 * stored as two ISO instants.
 */
export const RANGE_PRESETS = {
  all: { label: 'All time', ms: null },
  '1h': { label: 'Last hour', ms: 3_600_000 },
  '24h': { label: 'Last 24 hours', ms: 86_400_000 },
  '7d': { label: 'Last 7 days', ms: 7 * 86_400_000 },
  '30d': { label: 'Last 30 days', ms: 30 * 86_400_000 },
  custom: { label: 'Custom range', ms: null },
} as const;
export type RangePreset = keyof typeof RANGE_PRESETS;

export const TEXT_FILTERS = ['actor_id', 'action', 'resource_type', 'resource_id'] as const;

export interface ExplorerFilters {
  actor_id: string;
  action: string;
  resource_type: string;
  resource_id: string;
  range: RangePreset;
  /** ISO instants, used when range is "custom". */
  from: string;
  to: string;
}

export const EMPTY_FILTERS: ExplorerFilters = { actor_id: '', action: '', resource_type: '', resource_id: '', range: 'all', from: '', to: '' };

function isPreset(value: string | null): value is RangePreset {
  return value !== null && value in RANGE_PRESETS;
}

export function filtersFromSearch(params: URLSearchParams): ExplorerFilters {
  const range = params.get('range');
  return {
    actor_id: params.get('actor_id') ?? '',
    action: params.get('action') ?? '',
    resource_type: params.get('resource_type') ?? '',
    resource_id: params.get('resource_id') ?? '',
    range: isPreset(range) ? range : params.get('from') || params.get('to') ? 'custom' : 'all',
    from: params.get('from') ?? '',
    to: params.get('to') ?? '',
  };
}

export function filtersToSearch(filters: ExplorerFilters): URLSearchParams {
  const params = new URLSearchParams();
  for (const key of TEXT_FILTERS) if (filters[key].trim()) params.set(key, filters[key].trim());
  if (filters.range !== 'all') params.set('range', filters.range);
  if (filters.range === 'custom') {
    if (filters.from) params.set('from', filters.from);
    if (filters.to) params.set('to', filters.to);
  }
  return params;
}

/** The list and export endpoints' query: text filters plus start_date / end_date, resolved against now. */
export function toApiFilters(filters: ExplorerFilters, now = Date.now()): Record<string, string> {
  const api: Record<string, string> = {};
  for (const key of TEXT_FILTERS) if (filters[key].trim()) api[key] = filters[key].trim();
  const preset = RANGE_PRESETS[filters.range];
  if (preset.ms !== null) api.start_date = new Date(now - preset.ms).toISOString();
  if (filters.range === 'custom') {
    if (filters.from) api.start_date = filters.from;
    if (filters.to) api.end_date = filters.to;
  }
  return api;
}

export function hasAnyFilter(filters: ExplorerFilters): boolean {
  return TEXT_FILTERS.some((key) => filters[key].trim() !== '') || filters.range !== 'all';
}

/** `<input type="datetime-local">` speaks local wall time without a zone; these convert to and from instants. */
export function isoToLocalInput(iso: string): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function localInputToIso(value: string, edge: 'start' | 'end'): string {
  if (!value) return '';
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return '';
  // A minute picked as the end includes the whole minute.
  if (edge === 'end') d.setSeconds(59, 999);
  return d.toISOString();
}
