/** Context creation: API-key authentication happens here, once per request, for both surfaces. */
import type { IncomingMessage } from 'node:http';
import type { Services } from '../services/container';
import type { Context } from './init';

export async function createContext(services: Services, req: IncomingMessage, requestId: string): Promise<Context> {
  return { services, requestId, auth: await services.auth.authenticate(req.headers.authorization) };
}
