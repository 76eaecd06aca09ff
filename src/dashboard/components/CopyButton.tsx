/** Copies a text and says so; falls back to selecting it where the Clipboard API is unavailable (plain HTTP). */
import { useState } from 'react';

export function CopyButton({ text, label = 'Copy', targetId }: { text: string; label?: string; targetId?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'select'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState('copied');
    } catch {
      const target = targetId ? document.getElementById(targetId) : null;
      if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) target.select();
      else if (target) {
        const range = document.createRange();
        range.selectNodeContents(target);
        window.getSelection()?.removeAllRanges();
        window.getSelection()?.addRange(range);
      }
      setState('select');
    }
    window.setTimeout(() => setState('idle'), 2500);
  };
  return (
    <button type="button" className="button secondary copy-button" onClick={() => void copy()} aria-live="polite">
      {state === 'copied' ? 'Copied' : state === 'select' ? 'Press Ctrl+C' : label}
    </button>
  );
}
