/**
 * Serves the built dashboard (`npm run build` writes dist/dashboard). Hashed files under /assets are
 * cached for a year (their names change with their content); index.html is revalidated on every load,
 * so a deploy shows at once. Any other GET for an HTML page gets index.html: the dashboard routes on
 * the client, and a shared link or a reload must land on the same view.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Middleware } from 'koa';
import send from 'koa-send';
import type { AppState } from './appState';

export const DASHBOARD_DIR = path.resolve(__dirname, '../../dist/dashboard');

/** Paths that belong to the API and the operator surfaces, never to the dashboard. */
const NOT_DASHBOARD = ['/v1/', '/trpc/', '/session/', '/viewer/', '/docs', '/openapi.json', '/metrics', '/healthz', '/readyz'];

/** Dashboard pages load scripts, styles and data from this origin only, and cannot be framed. */
const PAGE_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
};

/**
 * The hosted viewer (`/viewer?token=…`): the same sources, but it may be framed by the origins of
 * VIEWER_FRAME_ANCESTORS (an application embeds it for its customers), never cached, and its URL (which
 * holds the token) is never sent as a Referer.
 */
function viewerHeaders(frameAncestors: string): Record<string, string> {
  return {
    ...PAGE_HEADERS,
    'Content-Security-Policy': (PAGE_HEADERS['Content-Security-Policy'] as string).replace("frame-ancestors 'none'", `frame-ancestors ${frameAncestors}`),
    'X-Frame-Options': '',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
  };
}

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>Audit Ledger</title>
<p style="font-family:sans-serif">The dashboard has not been built. Run <code>npm run build</code> (or <code>npm start</code>, which builds it) and reload.</p>`;

export function dashboardAssets(root: string = DASHBOARD_DIR, viewerFrameAncestors = '*'): Middleware<AppState> {
  const viewer = viewerHeaders(viewerFrameAncestors);
  return async (ctx, next) => {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || NOT_DASHBOARD.some((p) => ctx.path === p || ctx.path.startsWith(p))) {
      await next();
      return;
    }
    if (ctx.path.startsWith('/assets/')) {
      await sendIfExists(ctx, root, ctx.path, 'public, max-age=31536000, immutable');
      return;
    }
    // Top-level files that Vite copies unhashed (favicon): cached briefly.
    if (/^\/[\w.-]+\.(svg|png|ico|txt)$/.test(ctx.path) && (await sendIfExists(ctx, root, ctx.path, 'public, max-age=3600'))) return;
    if (!ctx.accepts('html')) {
      await next();
      return;
    }
    const isViewer = ctx.path === '/viewer';
    for (const [name, value] of Object.entries(isViewer ? viewer : PAGE_HEADERS)) {
      if (value) ctx.set(name, value);
      else ctx.remove(name);
    }
    const page = isViewer ? 'viewer.html' : 'index.html';
    if (!existsSync(path.join(root, page))) {
      ctx.status = 503;
      ctx.type = 'html';
      ctx.body = NOT_BUILT;
      return;
    }
    await send(ctx, page, { root, setHeaders: (res) => res.setHeader('Cache-Control', isViewer ? 'no-store' : 'no-cache') });
  };
}

/** Sends a file under root with a Cache-Control; false (and nothing sent) when there is no such file. */
async function sendIfExists(ctx: Parameters<Middleware<AppState>>[0], root: string, file: string, cacheControl: string): Promise<boolean> {
  try {
    await send(ctx, file, { root, setHeaders: (res) => res.setHeader('Cache-Control', cacheControl) });
    return true;
  } catch (error) {
    if (error instanceof Error && 'status' in error && (error.status === 404 || error.status === 400)) return false;
    throw error;
  }
}
