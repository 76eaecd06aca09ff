// Builds the package from src/ and the verification core it takes from the service's src/client:
// - dist/index.js (ES module) and dist/index.cjs (CommonJS), bundled by rolldown, canonicalize included:
//   the package has no dependencies;
// - dist/index.d.ts and dist/router.d.ts: tsc's declarations bundled by rollup-plugin-dts into one file
//   each. The router's declaration names the server's context and procedure meta, which a client never
//   uses and which would drag in the server's dependencies (mongodb, koa, trpc-to-openapi): they become
//   `object` before bundling, and the build fails if anything but @trpc/server is left to import.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
rmSync(here('dist'), { recursive: true, force: true });
rmSync(here('.build'), { recursive: true, force: true });

const code = await rolldown({ input: here('src/index.ts'), platform: 'neutral' });
await code.write({ file: here('dist/index.js'), format: 'esm' });
await code.write({ file: here('dist/index.cjs'), format: 'cjs' });
await code.close();
// No dependencies and nothing of Node's: the bundle imports nothing (it runs in browsers too).
for (const file of ['index.js', 'index.cjs']) {
  const js = readFileSync(here(`dist/${file}`), 'utf8');
  const found = [...js.matchAll(/^\s*import\s.*?from\s*['"]([^'"]+)['"]|\brequire\(\s*['"]([^'"]+)['"]\s*\)|\bimport\(\s*['"]([^'"]+)['"]/gm)].map((m) => m[1] ?? m[2] ?? m[3]);
  if (found.length > 0) throw new Error(`dist/${file} imports ${[...new Set(found)].join(', ')}: the package has no dependencies`);
}

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit', cwd: here('.') });
const types = here('.build/types/');
const serverRouter = `${types}src/trpc/router.d.ts`;
let router = readFileSync(serverRouter, 'utf8');
for (const internal of ['import("./context").Context', 'import("./init").ProcedureMeta']) {
  if (!router.includes(internal)) throw new Error(`the router's declaration no longer names ${internal}: update build.mjs`);
  router = router.replaceAll(internal, 'object');
}
writeFileSync(serverRouter, router);

for (const name of ['index', 'router']) {
  const bundle = await rollup({ input: `${types}packages/client/src/${name}.d.ts`, plugins: [dts()] });
  await bundle.write({ file: here(`dist/${name}.d.ts`), format: 'es' });
  const imports = [...readFileSync(here(`dist/${name}.d.ts`), 'utf8').matchAll(/(?:from |import\(|import |\/\/\/ <reference (?:types|path)=)['"]([^'"]+)['"]/g)].map((m) => m[1]);
  const foreign = imports.filter((specifier) => specifier !== '@trpc/server');
  if (foreign.length > 0) throw new Error(`dist/${name}.d.ts imports ${[...new Set(foreign)].join(', ')}: a consumer would need them`);
}
// CommonJS consumers resolve the same declarations (they describe both builds).
writeFileSync(here('dist/index.d.cts'), readFileSync(here('dist/index.d.ts')));
rmSync(here('.build'), { recursive: true, force: true });
