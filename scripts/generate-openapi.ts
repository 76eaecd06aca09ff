/**
 * Writes openapi.json from the router, and the client package's types from openapi.json with
 * openapi-typescript, as a third party would generate them (`npm run openapi:generate`); a test fails
 * when either file is stale.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderOpenApiDocument } from '../src/http/openapiDocument';

const root = join(__dirname, '..');
const target = join(root, 'openapi.json');
writeFileSync(target, renderOpenApiDocument());
process.stdout.write(`wrote ${target}\n`);
const types = join(root, 'packages', 'client', 'src', 'openapi.ts');
execFileSync(process.execPath, [join(root, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'), target, '--output', types], { stdio: ['ignore', 'ignore', 'inherit'] });
process.stdout.write(`wrote ${types}\n`);
