/**
 * The before/after view of a field change (interface.md §2.2: metadata `field`, `old_value`,
 * `new_value`). Strings are compared word by word, anything else as formatted JSON line by line.
 */
import { type Change, diffLines, diffWordsWithSpace } from 'diff';
import type { FieldChange } from '../lib/fieldChange';

function asText(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value, null, 2) ?? 'undefined');
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
        <div className="diff-pane before">
          <div className="diff-label">Before</div>
          <pre data-testid="diff-before">
            {parts.filter((p) => !p.added).map((p, i) => (p.removed ? <del key={i}>{p.value}</del> : <span key={i}>{p.value}</span>))}
          </pre>
        </div>
        <div className="diff-pane after">
          <div className="diff-label">After</div>
          <pre data-testid="diff-after">
            {parts.filter((p) => !p.removed).map((p, i) => (p.added ? <ins key={i}>{p.value}</ins> : <span key={i}>{p.value}</span>))}
          </pre>
        </div>
      </div>
    </section>
  );
}
