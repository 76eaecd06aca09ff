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

const given = new URLSearchParams(window.location.search).get('token');
// Kept for this tab only; the address bar (and so history and bookmarks) no longer shows it.
if (given) sessionStorage.setItem('viewer-token', given);
const token = given ?? sessionStorage.getItem('viewer-token');
if (given) window.history.replaceState(null, '', '/viewer');

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
