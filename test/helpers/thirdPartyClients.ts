/**
 * Third parties' generated clients (test/client/thirdParty/): each generator run on an OpenAPI document
 * (the committed openapi.json, or a broken copy of it) and the program written against its output
 * compiled, as an outside developer would.
 *
 * - openapi-typescript 7.13 generates `schema.ts` beside a copy of openapi-fetch/program.ts, which the
 *   repository's tsc (5.9) type-checks with a tsconfig of its own (strict, library declarations checked
 *   too), in a folder under `.cache/` so that `openapi-fetch` resolves from the repository's node_modules.
 * - oapi-codegen v2.8.2 (the tool that oapi-codegen/go.mod pins, from the Go module proxy) generates
 *   `api/client.gen.go` in a copy of that module, which `go build` compiles. Go's build cache keeps the
 *   tool and the runtime library compiled; goPrograms.ts keeps the binary for the committed document.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
export const OPENAPI_JSON = join(ROOT, 'openapi.json');
const THIRD_PARTY = join(ROOT, 'test', 'client', 'thirdParty');
export const OAPI_GO_MODULE = join(THIRD_PARTY, 'oapi-codegen');
/** What decides the Go program besides its Go files: the generator's configuration and the document. */
export const OAPI_GO_INPUTS = [join(OAPI_GO_MODULE, 'oapi-codegen.yaml'), OPENAPI_JSON];
const OPENAPI_FETCH_PROGRAM = join(THIRD_PARTY, 'openapi-fetch', 'program.ts');
export const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');

/** The program's own compiler settings: the repository's strictness, and the libraries' declarations checked. */
const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'preserve',
    moduleResolution: 'bundler',
    lib: ['ES2022'],
    types: ['node'],
    strict: true,
    noUncheckedIndexedAccess: true,
    verbatimModuleSyntax: true,
    isolatedModules: true,
    skipLibCheck: false,
    noEmit: true,
  },
  files: ['program.ts', 'schema.ts'],
};

/** A generator or compiler that refused: which step, and what it printed. */
export class ToolFailed extends Error {
  constructor(readonly step: string, readonly output: string) {
    super(`${step} failed:\n${output}`);
  }

  /** What goPrograms.ts reports of a failed build. */
  get stderr(): string {
    return this.message;
  }
}

async function step(name: string, file: string, args: string[], cwd: string): Promise<void> {
  try {
    // The first run downloads the modules go.sum pins and compiles the tool: minutes on a fresh machine.
    await run(file, args, { cwd, timeout: 600_000, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new ToolFailed(name, `${stdout}${stderr}`.trim() || (error instanceof Error ? error.message : String(error)));
  }
}

/**
 * Generates the Go client from `schema` with oapi-codegen, in a copy of the module, and builds the
 * program into `output`. Throws a ToolFailed naming the step that refused.
 */
export async function buildOapiGoProgram(schema: string, output: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'oapi-go-'));
  try {
    // A client generated into the module by hand (api/doc.go says how) is not used.
    cpSync(OAPI_GO_MODULE, dir, { recursive: true, filter: (source) => !source.endsWith('.gen.go') });
    await step('oapi-codegen', 'go', ['tool', 'oapi-codegen', '-config', 'oapi-codegen.yaml', schema], dir);
    // -trimpath: the build cache serves the same sources in another temporary copy.
    await step('go build', 'go', ['build', '-trimpath', '-o', output, '.'], dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Generates `schema.ts` from `schema` with openapi-typescript beside a copy of the openapi-fetch program,
 * and type-checks the two. Resolves to the folder (the caller runs program.ts there and removes it);
 * throws a ToolFailed naming the step that refused, the folder removed.
 */
export async function typeCheckOpenapiFetchProgram(schema: string): Promise<string> {
  mkdirSync(join(ROOT, '.cache'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.cache', 'openapi-fetch-'));
  try {
    await step('openapi-typescript', process.execPath, [join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'), schema, '--output', join(dir, 'schema.ts')], dir);
    cpSync(OPENAPI_FETCH_PROGRAM, join(dir, 'program.ts'));
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
    await step('tsc', process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.json')], dir);
    return dir;
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * openapi.json with the changes a generated client's user would trip on: EventPage's `next_cursor`
 * renamed `cursor_next` and Event's required `id` an integer. Both programs read both, so each must
 * fail to compile, naming them. Written to a file of its own; the caller removes it.
 */
export function brokenOpenApiJson(source: string): string {
  const doc = JSON.parse(source) as { components: { schemas: Record<string, { properties: Record<string, unknown>; required: string[] }> } };
  const page = doc.components.schemas.EventPage;
  const event = doc.components.schemas.Event;
  if (!page?.properties.next_cursor || !event?.properties.id) throw new Error('openapi.json has no EventPage.next_cursor or Event.id to break: update brokenOpenApiJson');
  page.properties = Object.fromEntries(Object.entries(page.properties).map(([name, schema]) => [name === 'next_cursor' ? 'cursor_next' : name, schema]));
  page.required = page.required.map((name) => (name === 'next_cursor' ? 'cursor_next' : name));
  event.properties.id = { type: 'integer' };
  const path = join(mkdtempSync(join(tmpdir(), 'openapi-broken-')), 'openapi.json');
  writeFileSync(path, JSON.stringify(doc, null, 2));
  return path;
}
