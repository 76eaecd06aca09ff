/** The footer of a paged event list: how many are shown, and "Load more" while the server has more. */
import { plural } from '../lib/format';

export function LoadMoreFooter({ shown, hasMore, loading, onMore }: { shown: number; hasMore: boolean; loading: boolean; onMore: () => void }) {
  return (
    <footer className="table-footer">
      <span className="muted">
        {plural(shown, 'event')} shown{hasMore ? ', more available' : ''}
      </span>
      {hasMore && (
        <button type="button" className="button secondary" onClick={onMore} disabled={loading}>
          {loading ? 'Loading…' : 'Load more'}
        </button>
      )}
    </footer>
  );
}
