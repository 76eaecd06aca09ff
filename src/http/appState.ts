import type { Logger } from 'pino';

/** What the request-context middleware puts on `ctx.state` for everything after it. */
export interface AppState {
  requestId: string;
  log: Logger;
}
