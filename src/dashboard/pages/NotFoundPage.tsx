import { Link } from 'react-router';
import { EmptyState } from '../components/States';

export function NotFoundPage() {
  return (
    <div className="full-page-center">
      <EmptyState title="Page not found" action={<Link className="button primary" to="/">Go to the dashboard</Link>}>
        The address may be mistyped, or the page has moved.
      </EmptyState>
    </div>
  );
}
