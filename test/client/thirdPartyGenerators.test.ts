/**
 * Third parties' generators (issue 38): the committed openapi.json generates clients that compile with
 * openapi-typescript 7.13 + openapi-fetch 0.17 and with oapi-codegen v2.8.2 (Go, from the module
 * proxy), and a program on each creates, lists page by page and exports against a live server. Both
 * generators run on the committed document here, so a change to it that breaks either generated
 * client fails this suite; the negative controls show that the type check and the build do fail on
 * such a change. The programs are in test/client/thirdParty/, the steps in helpers/thirdPartyClients.ts.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { goProgram } from '../helpers/goPrograms';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { brokenOpenApiJson, buildOapiGoProgram, OPENAPI_JSON, ToolFailed, TSX, typeCheckOpenapiFetchProgram } from '../helpers/thirdPartyClients';

const run = promisify(execFile);

interface Summary {
  created: string[];
  pages: number;
  export_json: number;
  export_csv: number;
}

/** Runs a program against the app as `org`, and checks what it says it did against the server. */
async function runProgram(app: TestApp, org: TestOrg, file: string, args: string[]): Promise<Summary> {
  const { stdout } = await run(file, args, { env: { ...process.env, AUDIT_LEDGER_URL: app.url, AUDIT_LEDGER_API_KEY: org.key }, timeout: 90_000 });
  const summary = JSON.parse(stdout) as Summary;
  // One event and a batch of four; pages of two, so three pages.
  expect(summary).toEqual({ created: expect.any(Array), pages: 3, export_json: 5, export_csv: 5 });
  expect(new Set(summary.created).size).toBe(5);
  for (const id of summary.created) {
    const response = await fetch(`${app.url}/v1/events/${id}`, { headers: { authorization: `Bearer ${org.key}` } });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id, organization_id: org.id });
  }
  return summary;
}

/** The step that refused and what it said, for a build that must fail. */
async function failure(build: Promise<unknown>): Promise<ToolFailed> {
  const error = await build.then(() => undefined, (e: unknown) => e);
  if (error === undefined) throw new Error('expected a refused step, and it built');
  if (!(error instanceof ToolFailed)) throw error instanceof Error ? error : new Error('the build threw a non-error', { cause: error });
  return error;
}

describe('clients generated from the committed openapi.json, against a live server', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ label: 'thirdparty' });
  });
  afterAll(() => app.close());

  test('openapi-typescript 7.13 + openapi-fetch 0.17: the program type-checks on the generated paths, then creates, pages and exports', async () => {
    const dir = await typeCheckOpenapiFetchProgram(OPENAPI_JSON);
    try {
      await runProgram(app, await app.org(), TSX, [join(dir, 'program.ts')]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('oapi-codegen v2.8.2: the Go program builds on the generated client, then creates, pages and exports', async () => {
    await runProgram(app, await app.org(), await goProgram('oapiclient'), []);
  });
});

describe('a changed openapi.json that breaks a generated client fails', () => {
  // EventPage.next_cursor renamed and Event.id an integer: each generator still generates, and the
  // program written against the committed document no longer compiles.
  let broken: string;
  beforeAll(() => {
    broken = brokenOpenApiJson(readFileSync(OPENAPI_JSON, 'utf8'));
  });
  afterAll(() => {
    rmSync(dirname(broken), { recursive: true, force: true });
  });

  test('the openapi-fetch program\'s type check', async () => {
    const refused = await failure(typeCheckOpenapiFetchProgram(broken));
    expect(refused.step).toBe('tsc');
    expect(refused.output).toMatch(/program\.ts\(\d+,\d+\): error TS\d+: .*'next_cursor'/);
    expect(refused.output).toMatch(/program\.ts\(\d+,\d+\): error TS\d+: Argument of type 'number' is not assignable to parameter of type 'string'/);
  });

  test('the oapi-codegen program\'s go build', async () => {
    const refused = await failure(buildOapiGoProgram(broken, join(dirname(broken), 'oapiclient')));
    expect(refused.step).toBe('go build');
    expect(refused.output).toMatch(/main\.go:\d+:\d+: .*NextCursor/);
    expect(refused.output).toMatch(/main\.go:\d+:\d+: cannot use (event|e)\.Id \(variable of type int\)/);
  });
});
