// Builds dist/esm (ES modules) and dist/cjs (CommonJS), each with its declarations, from src/ with the
// repository's TypeScript. No bundler: the package is a handful of modules with no dependencies.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync(new URL('dist', import.meta.url), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit', cwd: import.meta.dirname });
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--module', 'commonjs', '--moduleResolution', 'node10', '--verbatimModuleSyntax', 'false', '--outDir', 'dist/cjs'], { stdio: 'inherit', cwd: import.meta.dirname });
// The package is "type": "module"; this marks the CommonJS half as such.
writeFileSync(new URL('dist/cjs/package.json', import.meta.url), '{ "type": "commonjs" }\n');
