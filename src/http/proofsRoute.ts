/**
 * GET /v1/ledger/proofs: the proofs sidecar an auditor keeps beside an export. A plain Koa route, like
 * the export's, because it streams: one checkpoint, then each exported event's inclusion path, in the
 * export's order, as one JSON object. Its query is the export's filters (no format) and `tree_size`.
 */
import { Readable } from 'node:stream';
import type { Middleware } from 'koa';
import { ZProofsQuery } from '../domain/ledger/schemas';
import { validationError } from '../domain/validation';
import { loggableError } from '../db/errors';
import type { HttpServices } from '../services/container';
import type { AppState } from './appState';
import type { ExportAuthenticator } from './exportRoute';

export function proofsRoute(services: HttpServices, authenticate: ExportAuthenticator): Middleware<AppState> {
  return async (ctx) => {
    const principal = await authenticate(ctx);
    const parsed = ZProofsQuery.safeParse(ctx.query);
    if (!parsed.success) throw validationError(parsed.error.issues);
    const { tree_size: treeSize, ...filters } = parsed.data;
    // The filters as given (each a single string: the schema refuses anything else), for the sidecar.
    const given = Object.fromEntries(Object.entries(ctx.query).filter(([name]) => name !== 'tree_size')) as Record<string, string>;
    // Anything that fails here is answered with a JSON error: no byte of the body has been sent yet.
    const { checkpoint, proofs } = await services.api.ledgerReads.proofs(principal, filters, treeSize);
    const installation = await services.api.ledgerReads.installation(checkpoint);
    async function* body(): AsyncGenerator<string> {
      yield `{"checkpoint":${JSON.stringify(checkpoint.note)},"tree_size":${checkpoint.size},"filters":${JSON.stringify(given)},"installation":${JSON.stringify(installation)},"proofs":[`;
      let first = true;
      for await (const proof of proofs) {
        yield `${first ? '' : ','}\n${JSON.stringify(proof)}`;
        first = false;
      }
      yield '\n]}\n';
    }
    const stream = Readable.from(body());
    stream.on('error', (error) => { ctx.state.log.error(loggableError(error), 'proofs stream failed after its first byte'); });
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.set('Content-Disposition', 'attachment; filename="audit_logs.proofs.json"');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = stream;
  };
}
