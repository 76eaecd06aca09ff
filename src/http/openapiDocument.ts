/**
 * openapi.json, generated from the router. The streaming export is not a trpc-to-openapi procedure, so
 * its path is described here from the same zod schemas; successes that are not 200 and the error body
 * are filled in from the procedures' meta and `ZErrorBody`, the same definitions the server uses.
 */
import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { z } from 'zod';
import { DASHBOARD_ONLY_CODES, ERROR_CODES, type ErrorCode, ZErrorBody } from '../domain/errors';
import { ZEvent, ZExportEventsInput } from '../domain/event';
import { ZProofsQuery, ZProofsSidecar } from '../domain/ledger/schemas';
import { appRouter } from '../trpc/router';
import { REST_OPERATIONS, REST_PREFIX } from './restApi';

export const API_VERSION = '1.0.0';

/** The error body as /v1 gives it: the dashboard's own codes never reach REST clients. */
const ZApiErrorBody = ZErrorBody.extend({
  code: z.enum((Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => !DASHBOARD_ONLY_CODES.includes(code)) as [ErrorCode, ...ErrorCode[]]),
}).meta({ id: 'Error' });

const errorContent = { 'application/json': { schema: ZApiErrorBody } };

export function buildOpenApiDocument(): OpenAPIObject {
  const doc = generateOpenApiDocument(appRouter, {
    title: 'Audit Ledger API',
    version: API_VERSION,
    description: 'Record, read, list and export audit events. Every call needs `Authorization: Bearer <API key>`, of a key with the scope the operation names (`events:write`, `events:read`, `ledger:read`, `retention:manage`; 403 INSUFFICIENT_SCOPE otherwise).',
    baseUrl: REST_PREFIX,
    securitySchemes: { Authorization: { type: 'http', scheme: 'bearer', description: 'An API key: alk_ followed by 43 characters' } },
    defs: { Error: ZApiErrorBody },
    paths: {
      '/events/export': {
        get: {
          operationId: 'events-export',
          summary: 'Export every matching event as JSON or CSV',
          description:
            'Streams all matching events, newest first, in one response (no pagination). CSV columns: id, timestamp, actor_id, actor_name, action, resource_type, resource_id, resource_name, organization_id; metadata is only in JSON.',
          tags: ['events'],
          security: [{ Authorization: ['events:read'] }],
          requestParams: { query: ZExportEventsInput },
          responses: {
            200: {
              description: 'All matching events (Content-Disposition: attachment)',
              content: { 'application/json': { schema: z.array(ZEvent) }, 'text/csv': { schema: z.string() } },
            },
            400: { description: 'Invalid filter or format', content: errorContent },
            401: { description: 'Missing or invalid API key', content: errorContent },
            403: { description: 'INSUFFICIENT_SCOPE: the API key lacks events:read', content: errorContent },
          },
        },
      },
      '/ledger/proofs': {
        get: {
          operationId: 'ledger-proofs',
          summary: 'The inclusion proof of every event an export with the same filters returns',
          description:
            'Streams one checkpoint and, in the export\'s order, each event\'s leaf index and RFC 6962 inclusion path in that checkpoint\'s tree: the sidecar to keep beside a JSON export (`npx audit-ledger verify` checks both offline).',
          tags: ['ledger'],
          security: [{ Authorization: ['ledger:read'] }],
          requestParams: { query: ZProofsQuery },
          responses: {
            200: { description: 'The sidecar (Content-Disposition: attachment)', content: { 'application/json': { schema: ZProofsSidecar } } },
            400: { description: 'Invalid filter or tree_size', content: errorContent },
            401: { description: 'Missing or invalid API key', content: errorContent },
            403: { description: 'INSUFFICIENT_SCOPE: the API key lacks ledger:read', content: errorContent },
            404: { description: 'No checkpoint of that size, or none yet', content: errorContent },
          },
        },
      },
    },
  });
  return normalize(doc);
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null;

/**
 * What trpc-to-openapi cannot be told: a success status other than 200 (it always documents 200), and
 * one error body for every error status (it generates a schema per tRPC error code). So each
 * operation's success is moved to its procedure's `successStatus`, every error response points at the
 * Error schema, and the 500 that any operation may answer is listed.
 */
function normalize(doc: OpenAPIObject): OpenAPIObject {
  if (doc.components?.schemas) {
    doc.components.schemas = Object.fromEntries(Object.entries(doc.components.schemas).filter(([name]) => !name.startsWith('error.')));
  }
  for (const op of REST_OPERATIONS) {
    const responses = (doc.paths?.[op.path] as Json | undefined)?.[op.method.toLowerCase()];
    if (isObject(responses) && isObject(responses.responses) && op.successStatus !== 200) {
      responses.responses[String(op.successStatus)] = responses.responses['200'];
      delete responses.responses['200'];
    }
    // The key's scope this operation needs (OpenAPI 3.1 lets a bearer scheme's requirement name roles).
    if (isObject(responses) && op.scope) {
      responses.security = [{ Authorization: [op.scope] }];
      if (isObject(responses.responses)) responses.responses['403'] = { description: `INSUFFICIENT_SCOPE: the API key lacks ${op.scope}` };
    }
  }
  for (const item of Object.values(doc.paths ?? {}) as Json[]) {
    for (const operation of Object.values(item).filter(isObject)) {
      const responses = operation.responses;
      if (!isObject(responses)) continue;
      responses['500'] = { description: 'Internal server error' };
      for (const [code, response] of Object.entries(responses)) {
        if (Number(code) >= 400 && isObject(response)) {
          response.content = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };
        }
      }
    }
  }
  return doc;
}

/** The committed file's text: stable formatting so a stale file shows up as a diff. */
export function renderOpenApiDocument(): string {
  return `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
}
