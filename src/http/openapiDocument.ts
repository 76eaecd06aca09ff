/**
 * openapi.json, generated from the router. The streaming export is not a trpc-to-openapi procedure, so
 * its path is described here from the same zod schemas; successes that are not 200 and the error body
 * are filled in from `SUCCESS_STATUS` and `ZErrorBody`, the same definitions the server uses.
 */
import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { z } from 'zod';
import { DASHBOARD_ONLY_CODES, ERROR_CODES, type ErrorCode } from '../domain/errors';
import { ZEvent, ZExportEventsInput } from '../domain/event';
import { appRouter } from '../trpc/router';
import { REST_PREFIX, SUCCESS_STATUS } from './restApi';

export const API_VERSION = '1.0.0';

export const ZErrorBody = z
  .object({
    message: z.string().meta({ description: 'Human-readable; the spec\'s fixed texts, e.g. "Missing required fields"' }),
    code: z.enum((Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => !DASHBOARD_ONLY_CODES.includes(code)) as [ErrorCode, ...ErrorCode[]]),
    fields: z.array(z.string()).optional().meta({ description: 'Offending request fields, as dotted paths' }),
  })
  .meta({ id: 'Error' });

const errorContent = { 'application/json': { schema: ZErrorBody } };

export function buildOpenApiDocument(): OpenAPIObject {
  const doc = generateOpenApiDocument(appRouter, {
    title: 'Audit Ledger API',
    version: API_VERSION,
    description: 'Record, read, list and export audit events. Every call needs `Authorization: Bearer <API key>`.',
    baseUrl: REST_PREFIX,
    securitySchemes: { Authorization: { type: 'http', scheme: 'bearer', description: 'An API key: alk_ followed by 43 characters' } },
    defs: { Error: ZErrorBody },
    paths: {
      '/events/export': {
        get: {
          operationId: 'events-export',
          summary: 'Export every matching event as JSON or CSV',
          description:
            'Streams all matching events, newest first, in one response (no pagination). CSV columns: id, timestamp, actor_id, actor_name, action, resource_type, resource_id, resource_name, organization_id; metadata is only in JSON.',
          tags: ['events'],
          security: [{ Authorization: [] }],
          requestParams: { query: ZExportEventsInput },
          responses: {
            200: {
              description: 'All matching events (Content-Disposition: attachment)',
              content: { 'application/json': { schema: z.array(ZEvent) }, 'text/csv': { schema: z.string() } },
            },
            400: { description: 'Invalid filter or format', content: errorContent },
            401: { description: 'Missing or invalid API key', content: errorContent },
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
 * Applies the non-200 success statuses, points every error response at the Error schema (dropping the
 * generator's own error schemas) and lists the 500 that any operation may answer.
 */
function normalize(doc: OpenAPIObject): OpenAPIObject {
  const schemas = doc.components?.schemas ?? {};
  for (const name of Object.keys(schemas)) if (name.startsWith('error.')) delete schemas[name];
  for (const item of Object.values(doc.paths ?? {}) as Json[]) {
    for (const operation of Object.values(item).filter(isObject)) {
      const responses = operation.responses;
      if (!isObject(responses)) continue;
      const procedure = typeof operation.operationId === 'string' ? operation.operationId.replace('-', '.') : '';
      const status = SUCCESS_STATUS[procedure];
      if (status && responses['200']) {
        responses[String(status)] = responses['200'];
        delete responses['200'];
      }
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
