/**
 * The service's tRPC router, as a type only: `createTRPCClient<AppRouter>` in a project that has this
 * package, `@trpc/client` and `@trpc/server`. The build turns it into one declaration file
 * (`dist/router.d.ts`) with no code and nothing of the server but the procedures' inputs and outputs.
 */
export type { AppRouter } from '../../../src/trpc/router.ts';
