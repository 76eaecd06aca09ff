/**
 * The line beside a form's submit button: what submitting will do, or, after a submit with something
 * missing, what to fill in first (announced to screen readers). Forms validate on submit, never grey the button.
 */
export function FormHint({ id, problem, children }: { id: string; problem: string | null; children: string }) {
  return (
    <span id={id} className={problem ? 'form-hint invalid' : 'form-hint muted small'} role={problem ? 'alert' : undefined}>
      {problem ?? children}
    </span>
  );
}
