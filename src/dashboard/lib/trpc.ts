/** The dashboard's only way to the server: a tRPC client typed by the server's own router. */
import { createTRPCClient, httpBatchLink, httpLink, splitLink, TRPCClientError } from '@trpc/client';
import type { TSessionEnded } from '../../domain/errors';
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
  sessionEnded?: TSessionEnded;
}

function dataOf(error: unknown): ErrorData | undefined {
  return error instanceof TRPCClientError ? (error.data as ErrorData | undefined) : undefined;
}

/**
 * The server's message as a sentence for a person, the one place every form gets its error text from:
 * "Invalid request: password must be at least 12 characters" shows as "Password must be at least 12
 * characters." A network failure gets a sentence that says what to do.
 */
export function errorMessage(error: unknown): string {
  const data = dataOf(error);
  if (!(error instanceof TRPCClientError) || !data) return 'Could not reach Audit Ledger. Check your connection and try again.';
  let text = error.message.replace(/^Invalid request: /, '');
  // The API names fields as it spells them (organization_name); a person reads them as words.
  for (const field of data.fields ?? []) {
    if (!field.includes('_')) continue;
    const name = new RegExp(`(?<![\\w.])${field.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w])`, 'g');
    text = text.replace(name, field.replaceAll('_', ' '));
  }
  const sentence = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.!?]$/.test(sentence) ? sentence : `${sentence}.`;
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

/** Why the session ended, when the server knows (a membership change ended it): the sign-in page says so. */
export function sessionEndedOf(error: unknown): TSessionEnded | undefined {
  return isNotSignedIn(error) ? dataOf(error)?.sessionEnded : undefined;
}
