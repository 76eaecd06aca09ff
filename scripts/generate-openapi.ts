/** Writes openapi.json from the router (`npm run openapi:generate`); a test fails when the file is stale. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderOpenApiDocument } from '../src/http/openapiDocument';

const target = join(__dirname, '..', 'openapi.json');
writeFileSync(target, renderOpenApiDocument());
process.stdout.write(`wrote ${target}\n`);
