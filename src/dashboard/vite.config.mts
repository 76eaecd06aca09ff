/** Builds the dashboard into dist/dashboard, which the Koa app serves (src/http/dashboardAssets.ts). */
import path from 'node:path';
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  // React's automatic JSX runtime through Vite's own transformer: no Babel plugin needed for a build.
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: path.resolve(import.meta.dirname, '../../dist/dashboard'),
    emptyOutDir: true,
    sourcemap: true,
    rolldownOptions: {
      // Two pages: the dashboard, and the hosted viewer an application's customers open (/viewer).
      input: { main: path.resolve(import.meta.dirname, 'index.html'), viewer: path.resolve(import.meta.dirname, 'viewer.html') },
      // React Query marks its modules "use client" for server-component bundlers; meaningless in an SPA.
      onLog(level, log, handler) {
        if (log.code === 'MODULE_LEVEL_DIRECTIVE') return;
        handler(level, log);
      },
    },
  },
  server: {
    // `npm run dev:dashboard` proxies the API to a running `npm start`.
    proxy: { '/trpc': 'http://localhost:3000', '/session': 'http://localhost:3000', '/viewer/export': 'http://localhost:3000' },
  },
});
