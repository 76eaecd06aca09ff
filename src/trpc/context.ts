/** Context creation: API-key authentication happens here, once per request, for both surfaces. */
import type { IncomingMessage } from 'node:http';
import type { AuthPurpose } from '../services/auth';
import type { Services } from '../services/container';
import type { Context } from './init';

/** `type` is what tRPC and trpc-to-openapi report for the call: mutations write, anything else reads. */
export async function createContext(services: Services, req: IncomingMessage, requestId: string, type: string): Promise<Context> {
  const purpose: AuthPurpose = type === 'mutation' ? 'write' : 'read';
  return { services, requestId, auth: await services.auth.authenticate(req.headers.authorization, purpose) };
}
