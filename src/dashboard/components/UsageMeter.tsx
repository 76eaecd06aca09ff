/** This month's events against the cap: a meter that turns amber at 80% and red at 100%. */
import { formatNumber } from '../lib/format';

export interface UsageMeterProps {
  used: number;
  cap: number;
  state: 'ok' | 'warning' | 'exhausted';
  compact?: boolean;
}

export function UsageMeter({ used, cap, state, compact = false }: UsageMeterProps) {
  const percent = cap > 0 ? Math.min(100, (used / cap) * 100) : 100;
  // Never "0%" once something is used, never "100%" before the cap is reached.
  const shown = used > 0 && percent < 0.1 ? '<0.1' : percent >= 10 ? String(Math.min(Math.floor(percent), used < cap ? 99 : 100)) : String(Math.floor(percent * 10) / 10);
  return (
    <div className={`usage-meter ${state}${compact ? ' compact' : ''}`}>
      <div className="usage-numbers">
        <strong>{formatNumber(used)}</strong> <span className="muted">of {formatNumber(cap)} events this month</span>
        <span className="usage-percent">{shown}%</span>
      </div>
      <div className="meter-track">
        <meter className="visually-hidden" min={0} max={cap} low={cap * 0.8} high={cap * 0.999} optimum={0} value={used}>
          {shown}%
        </meter>
        <div className="meter-fill" style={{ width: `${percent}%` }} aria-hidden="true" />
      </div>
    </div>
  );
}
