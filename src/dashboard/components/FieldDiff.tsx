/**
 * The before/after view of a field change (interface.md §2.2: metadata `field`, `old_value`,
 * `new_value`). Strings are compared word by word, anything else as formatted JSON line by line.
 */
import { type Change, diffLines, diffWordsWithSpace } from 'diff';
import type { FieldChange } from '../lib/fieldChange';

function asText(value: unknown): string {
  // JSON.stringify(undefined) is undefined, whatever its type says.
  return typeof value === 'string' ? value : value === undefined ? 'undefined' : JSON.stringify(value, null, 2);
}

export function FieldDiff({ change }: { change: FieldChange }) {
  const bothStrings = typeof change.oldValue === 'string' && typeof change.newValue === 'string';
  const before = asText(change.oldValue);
  const after = asText(change.newValue);
  const parts: Change[] = bothStrings ? diffWordsWithSpace(before, after) : diffLines(before, after);
  return (
    <section className="field-diff" aria-label={`Change to ${change.field}`}>
      <header>
        <span className="muted">Field</span> <code className="field-name">{change.field}</code>
        {before === after && <span className="badge">unchanged</span>}
      </header>
      <div className="diff-panes">
        <DiffPane side="before" parts={parts} />
        <DiffPane side="after" parts={parts} />
      </div>
    </section>
  );
}

/** One side of the diff: the parts both sides share, plus this side's own, highlighted. */
function DiffPane({ side, parts }: { side: 'before' | 'after'; parts: Change[] }) {
  const own = (p: Change) => (side === 'before' ? p.removed : p.added);
  const other = (p: Change) => (side === 'before' ? p.added : p.removed);
  const Mark = side === 'before' ? 'del' : 'ins';
  return (
    <div className={`diff-pane ${side}`}>
      <div className="diff-label">{side === 'before' ? 'Before' : 'After'}</div>
      <pre data-testid={`diff-${side}`}>
        {parts.filter((p) => !other(p)).map((p, i) => (own(p) ? <Mark key={i}>{p.value}</Mark> : <span key={i}>{p.value}</span>))}
      </pre>
    </div>
  );
}
