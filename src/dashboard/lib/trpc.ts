/** The dashboard's only way to the server: a tRPC client typed by the server's own router. */
import { createTRPCClient, httpBatchLink, httpLink, splitLink, TRPCClientError } from '@trpc/client';
import type { AppRouter } from '../../trpc/router';

// The server refuses account calls (sign-in, sign-up, …) inside batches and batches over 10 calls.
export const trpc = createTRPCClient<AppRouter>({
  links: [
    splitLink({
      condition: (op) => op.path.startsWith('account.'),
      true: httpLink({ url: '/trpc' }),
      false: httpBatchLink({ url: '/trpc', maxItems: 10 }),
    }),
  ],
});

interface ErrorData {
  httpStatus?: number;
  appCode?: string;
  fields?: string[];
}

function dataOf(error: unknown): ErrorData | undefined {
  return error instanceof TRPCClientError ? (error.data as ErrorData | undefined) : undefined;
}

/** The server's message when there is one; a network failure gets a sentence that says what to do. */
export function errorMessage(error: unknown): string {
  if (error instanceof TRPCClientError && dataOf(error)) return error.message;
  return 'Could not reach Audit Ledger. Check your connection and try again.';
}

export function errorStatus(error: unknown): number | undefined {
  return dataOf(error)?.httpStatus;
}

export function isNotSignedIn(error: unknown): boolean {
  return errorCode(error) === 'NOT_SIGNED_IN';
}

/** The service's error code (`code` in /v1's bodies), when the server sent one. */
export function errorCode(error: unknown): string | undefined {
  return dataOf(error)?.appCode;
}
