/** openapi.json is generated from the router; a stale committed file fails here. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderOpenApiDocument } from '../../src/http/openapiDocument';
import { startTestApp, type TestApp } from '../helpers/harness';

const committed = readFileSync(join(__dirname, '..', '..', 'openapi.json'), 'utf8');

test('the committed openapi.json is what the router generates (run `npm run openapi:generate`)', () => {
  expect(committed).toBe(renderOpenApiDocument());
});

test('the client package\'s types are what openapi-typescript generates from it (run `npm run openapi:generate`)', () => {
  const root = join(__dirname, '..', '..');
  const dir = mkdtempSync(join(tmpdir(), 'openapi-ts-'));
  try {
    execFileSync(process.execPath, [join(root, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'), join(root, 'openapi.json'), '--output', join(dir, 'openapi.ts')], { stdio: 'ignore' });
    expect(readFileSync(join(root, 'packages', 'client', 'src', 'openapi.ts'), 'utf8')).toBe(readFileSync(join(dir, 'openapi.ts'), 'utf8'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('it describes every /v1 operation with the spec statuses', () => {
  const doc = JSON.parse(committed) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>>; servers: { url: string }[] };
  expect(doc.servers).toEqual([{ url: '/v1' }]);
  const ops = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => [`${method.toUpperCase()} ${path}`, Object.keys(op.responses).sort()]));
  expect(Object.fromEntries(ops)).toEqual({
    'POST /events': ['201', '400', '401', '403', '413', '415', '422', '429', '500'],
    'POST /events/batch': ['201', '400', '401', '403', '413', '415', '422', '429', '500'],
    'GET /events': ['200', '400', '401', '403', '500'],
    'GET /events/{id}': ['200', '401', '403', '404', '500'],
    'GET /events/export': ['200', '400', '401', '403', '500'],
    'GET /events/{id}/proof': ['200', '400', '401', '403', '404', '500'],
    'GET /ledger/key': ['200', '401', '403', '500'],
    'GET /ledger/checkpoint': ['200', '400', '401', '403', '404', '500'],
    'GET /ledger/consistency': ['200', '400', '401', '403', '404', '500'],
    'GET /ledger/proofs': ['200', '400', '401', '403', '404', '500'],
    'POST /streams': ['201', '400', '401', '403', '409', '413', '415', '500'],
    'GET /streams': ['200', '401', '403', '500'],
    'GET /streams/{id}': ['200', '400', '401', '403', '404', '500'],
    'DELETE /streams/{id}': ['200', '400', '401', '403', '404', '500'],
    'POST /streams/{id}/pause': ['200', '400', '401', '403', '404', '500'],
    'POST /streams/{id}/resume': ['200', '400', '401', '403', '404', '500'],
    'POST /streams/{id}/test': ['200', '400', '401', '403', '404', '500'],
    'POST /streams/{id}/retry': ['200', '400', '401', '403', '404', '500'],
    'POST /viewer-tokens': ['201', '400', '401', '403', '413', '415', '500', '503'],
    'GET /retention': ['200', '401', '403', '500'],
    'PUT /producer-key': ['200', '400', '401', '403', '409', '500'],
    'PUT /retention/policy': ['200', '400', '401', '403', '413', '415', '500'],
    'GET /retention/holds': ['200', '401', '403', '500'],
    'POST /retention/holds': ['201', '400', '401', '403', '413', '415', '500'],
    'DELETE /retention/holds/{id}': ['200', '400', '401', '403', '404', '500'],
    'POST /retention/erasures': ['200', '400', '401', '403', '409', '413', '415', '500'],
  });
});

describe('served', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ label: 'openapi' });
  });
  afterAll(() => app.close());

  test('/openapi.json, /docs, /healthz and /readyz answer', async () => {
    const doc = await fetch(`${app.url}/openapi.json`);
    expect(doc.status).toBe(200);
    expect(await doc.text()).toBe(committed);
    const docs = await fetch(`${app.url}/docs`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('/docs/swagger-ui-bundle.js');
    expect(await (await fetch(`${app.url}/docs/init.js`)).text()).toContain("url: '/openapi.json'");
    const bundle = await fetch(`${app.url}/docs/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    expect(Number(bundle.headers.get('content-length') ?? (await bundle.arrayBuffer()).byteLength)).toBeGreaterThan(100_000);
    expect(await (await fetch(`${app.url}/healthz`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${app.url}/readyz`)).json()).toEqual({ status: 'ready' });
  });
});
