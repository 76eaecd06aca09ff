/** Events received per day as an SVG bar chart; every bar has a tooltip, and the whole has a text summary. */
import { formatNumber, formatUtcDay, plural } from '../lib/format';

export function DailyChart({ days }: { days: { date: string; count: number }[] }) {
  const max = Math.max(1, ...days.map((d) => d.count));
  const total = days.reduce((sum, d) => sum + d.count, 0);
  const width = 720;
  const height = 180;
  const gap = 4;
  const barWidth = (width - gap * (days.length - 1)) / days.length;
  const label = formatUtcDay;
  return (
    <figure className="daily-chart">
      <svg viewBox={`0 -30 ${width} ${height + 60}`} role="img" aria-label={`Events per day, last ${days.length} days: ${formatNumber(total)} in all, at most ${formatNumber(max)} in one day`}>
        {[0.25, 0.5, 0.75, 1].map((f) => (
          <line key={f} x1={0} x2={width} y1={height - height * f} y2={height - height * f} className="grid" />
        ))}
        {days.map((d, i) => {
          const h = d.count === 0 ? 0 : Math.max(2, (d.count / max) * height);
          return (
            <rect key={d.date} x={i * (barWidth + gap)} y={height - h} width={barWidth} height={h} rx={2} className="bar">
              <title>{`${label(d.date)}: ${plural(d.count, 'event')}`}</title>
            </rect>
          );
        })}
        <text x={0} y={-10} className="axis">
          {plural(max, 'event')}
        </text>
        {days.map((d, i) => {
          // Weekly labels counted back from today, so today is always labelled; the last one is right-aligned.
          const fromEnd = days.length - 1 - i;
          if (fromEnd % 7 !== 0) return null;
          const last = fromEnd === 0;
          const center = i * (barWidth + gap) + barWidth / 2;
          // Labels near an edge are anchored to it, so they are never cut off.
          const anchor = last ? 'end' : center < 40 ? 'start' : 'middle';
          return (
            <text key={d.date} x={last ? width : anchor === 'start' ? 0 : center} y={height + 22} textAnchor={anchor} className="axis">
              {last ? 'Today' : label(d.date)}
            </text>
          );
        })}
      </svg>
      <figcaption className="muted">
        {plural(total, 'event')} received in the last {plural(days.length, 'day')} (UTC days); busiest day {formatNumber(total === 0 ? 0 : max)}.
      </figcaption>
    </figure>
  );
}
