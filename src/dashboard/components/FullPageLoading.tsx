/** Before the session is known: a quiet placeholder (or the error, with a way to retry). */
import { ErrorState } from './States';

export function FullPageLoading({ error, onRetry }: { error?: unknown; onRetry?: () => void }) {
  return (
    <div className="full-page-center">
      {error ? (
        <ErrorState error={error} onRetry={onRetry} />
      ) : (
        <div role="status" className="muted">
          Loading…
        </div>
      )}
    </div>
  );
}
