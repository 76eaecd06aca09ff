/**
 * A confirmation before something that cannot be taken back, as a native modal <dialog> (the Keys page's
 * pattern): focus starts on Cancel and stays inside, Escape cancels, and closing hands focus back to the
 * button that opened it. The action runs from here, so its error shows where the person is looking.
 */
import { useMutation } from '@tanstack/react-query';
import { type ReactNode, useEffect, useId, useRef } from 'react';
import { errorMessage } from '../lib/trpc';

export function ConfirmDialog({
  title,
  children,
  confirmLabel,
  busyLabel,
  onConfirm,
  onClose,
  testId,
}: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  busyLabel: string;
  onConfirm: () => Promise<unknown>;
  /** Called once the dialog closed, whether confirmed or cancelled. */
  onClose: () => void;
  testId?: string;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const act = useMutation({ mutationFn: onConfirm, onSuccess: () => ref.current?.close() });
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
  }, []);
  return (
    <dialog ref={ref} className="dialog" onClose={onClose} aria-labelledby={titleId} data-testid={testId}>
      <h2 id={titleId}>{title}</h2>
      <div>{children}</div>
      {act.isError && (
        <p className="form-error" role="alert">
          {errorMessage(act.error)}
        </p>
      )}
      <div className="dialog-actions">
        <button type="button" className="button secondary" onClick={() => ref.current?.close()} autoFocus>
          Cancel
        </button>
        <button type="button" className="button danger" onClick={() => act.mutate()} disabled={act.isPending}>
          {act.isPending ? busyLabel : confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
