/** /docs: an API reference page rendered by Swagger UI from /openapi.json, served locally (no CDN). */
import { createReadStream } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Middleware } from 'koa';
import type { AppState } from './appState';

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};

const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Audit Ledger API reference</title><link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="api"></div><script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script></body></html>`;

const INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#api', deepLinking: true });`;

export function docsPage(): Middleware<AppState> {
  // Resolved, not required: requiring swagger-ui-dist would load its 1 MB bundle into the server.
  const root = dirname(require.resolve('swagger-ui-dist/package.json'));
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      await next();
      return;
    }
    if (ctx.path === '/docs' || ctx.path === '/docs/') {
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = PAGE;
      return;
    }
    if (ctx.path === '/docs/init.js') {
      ctx.type = 'application/javascript; charset=utf-8';
      ctx.body = INIT;
      return;
    }
    const name = ctx.path.slice('/docs/'.length);
    const type = ctx.path.startsWith('/docs/') ? ASSETS[name] : undefined;
    if (!type) {
      await next();
      return;
    }
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = createReadStream(join(root, name));
  };
}
