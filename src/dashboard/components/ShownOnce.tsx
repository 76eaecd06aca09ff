/** A secret shown once (an API key, a webhook signing secret): a warning, the value selected on focus, a copy button, and "I have stored it". */
import type { ReactNode } from 'react';
import { CopyButton } from './CopyButton';

export function ShownOnce({ title, children, value, id, label, onDone }: { title: ReactNode; children: ReactNode; value: string; id: string; label: string; onDone: () => void }) {
  return (
    <div className="new-key callout warning" role="status">
      <h3>{title}</h3>
      <p>{children}</p>
      <div className="code-block single">
        <input id={id} data-testid={id} readOnly value={value} onFocus={(e) => e.target.select()} aria-label={label} />
        <CopyButton text={value} targetId={id} />
      </div>
      <button type="button" className="button ghost" onClick={onDone}>
        I have stored it
      </button>
    </div>
  );
}
