/** The dashboard: routes, the query cache, and the root render. */
import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createBrowserRouter, RouterProvider } from 'react-router';
import { Layout } from './components/Layout';
import { ME_KEY } from './lib/session';
import { errorStatus, isNotSignedIn } from './lib/trpc';
import { EventDetailPage } from './pages/EventDetailPage';
import { EventsPage } from './pages/EventsPage';
import { GettingStartedPage } from './pages/GettingStartedPage';
import { HomePage } from './pages/HomePage';
import { KeysPage } from './pages/KeysPage';
import { LoginPage } from './pages/LoginPage';
import { NotFoundPage } from './pages/NotFoundPage';
import { SignupPage } from './pages/SignupPage';
import { LedgerPage } from './pages/LedgerPage';
import { UsagePage } from './pages/UsagePage';
import { StreamsPage } from './pages/StreamsPage';
import { MembersPage } from './pages/MembersPage';
import { RetentionPage } from './pages/RetentionPage';
import { InvitePage } from './pages/InvitePage';
import './styles.css';

/** A session that ended (logout elsewhere, expiry) sends the person to the sign-in page from wherever they are. */
const onError = (error: unknown) => {
  if (isNotSignedIn(error)) queryClient.setQueryData(ME_KEY, null);
};

const queryClient: QueryClient = new QueryClient({
  queryCache: new QueryCache({ onError }),
  mutationCache: new MutationCache({ onError }),
  defaultOptions: {
    queries: {
      // A 4xx will not change on retry; network trouble and 5xx might.
      retry: (count, error) => (errorStatus(error) ?? 500) >= 500 && count < 2,
      refetchOnWindowFocus: false,
    },
  },
});

const router = createBrowserRouter([
  { path: '/login', element: <LoginPage /> },
  { path: '/signup', element: <SignupPage /> },
  { path: '/invite/:token', element: <InvitePage /> },
  {
    element: <Layout />,
    children: [
      { index: true, element: <HomePage /> },
      { path: 'start', element: <GettingStartedPage /> },
      { path: 'events', element: <EventsPage /> },
      { path: 'events/:id', element: <EventDetailPage /> },
      { path: 'keys', element: <KeysPage /> },
      { path: 'usage', element: <UsagePage /> },
      { path: 'ledger', element: <LedgerPage /> },
      { path: 'streams', element: <StreamsPage /> },
      { path: 'members', element: <MembersPage /> },
      { path: 'retention', element: <RetentionPage /> },
    ],
  },
  { path: '*', element: <NotFoundPage /> },
]);

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
