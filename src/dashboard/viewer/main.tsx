/**
 * The hosted viewer (`/viewer?token=…`): one customer's part of an organization's trail, for an
 * application to link to or embed. It holds only its viewer token (taken out of the address bar at
 * once) and calls only the `viewer.*` procedures and `/viewer/export`, which narrow everything to the
 * token's organization_id and actions on the server.
 */
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ViewerApp } from './ViewerApp';
import '../styles.css';

/** This tab's storage, or null where the browser refuses it (a third-party iframe with storage blocked). */
function tabStorage(): Storage | null {
  try {
    return window.sessionStorage;
  } catch {
    return null;
  }
}

const given = new URLSearchParams(window.location.search).get('token');
const storage = tabStorage();
// Kept for this tab only, and the address bar (history, bookmarks) no longer shows it; where the tab has
// no storage it stays in the address, so that a reload still works.
if (given && storage) {
  storage.setItem('viewer-token', given);
  window.history.replaceState(null, '', '/viewer');
}
const token = given ?? storage?.getItem('viewer-token') ?? null;

const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false, refetchOnWindowFocus: false } } });
const root = document.getElementById('root');
if (!root) throw new Error('viewer.html has no #root element');
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <ViewerApp token={token} />
    </QueryClientProvider>
  </StrictMode>,
);
