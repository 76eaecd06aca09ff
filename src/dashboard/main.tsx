/** The dashboard: routes, the query cache, and the root render. */
import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createBrowserRouter, RouterProvider } from 'react-router';
import { Layout } from './components/Layout';
import { RoleGate } from './components/NotForRole';
import { ME_KEY, SESSION_END_KEY, type SessionEnd } from './lib/session';
import { errorStatus, isNotSignedIn, sessionEndedOf } from './lib/trpc';
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

/**
 * A session that ended (removal from the organization, logout elsewhere, expiry) sends the person to the
 * sign-in page from wherever they are, which says why: the server's reason when it gave one.
 */
const onError = (error: unknown) => {
  if (!isNotSignedIn(error)) return;
  const wasSignedIn = Boolean(queryClient.getQueryData<object | null>(ME_KEY));
  const ended = sessionEndedOf(error);
  if (ended || wasSignedIn) queryClient.setQueryData<SessionEnd>(SESSION_END_KEY, ended ?? 'ended');
  queryClient.setQueryData(ME_KEY, null);
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
      {
        path: 'keys',
        element: (
          <RoleGate permission="keys:manage" page={{ title: 'API keys', managedBy: 'API keys are created and managed by', ask: 'to create a key for you' }}>
            <KeysPage />
          </RoleGate>
        ),
      },
      { path: 'usage', element: <UsagePage /> },
      { path: 'ledger', element: <LedgerPage /> },
      {
        path: 'streams',
        element: (
          <RoleGate permission="streams:manage" page={{ title: 'Streams', managedBy: 'Log streams are set up and managed by', ask: 'to send your events to a SIEM, object storage or endpoint' }}>
            <StreamsPage />
          </RoleGate>
        ),
      },
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
