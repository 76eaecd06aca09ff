/**
 * The client package as a user gets it: `npm pack` (which builds it), the tarball installed into an
 * empty project outside the repository beside `@trpc/client` and `@trpc/server` (from npm's cache: the
 * repository's own install put them there), a program type-checked against the package's declarations
 * alone (strict, no skipLibCheck, a `@ts-expect-error` on a wrong tRPC input), then run against a real
 * service process: 10,000 events through the delivery queue while the service is stopped and started
 * again on the same address, every receipt verified, the events read back over REST and tRPC; and, with
 * a second key bound to a producer key the program generates, events signed by it and verified.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { freePort } from '../helpers/disposableDatabase';
import { startTestApp, TEST_LEDGER_SIGNER, type TestApp } from '../helpers/harness';
import { ROOT, type ServerProcess, startServerProcess } from '../helpers/processes';

const run = promisify(execFile);
/** The versions the repository installed (so npm finds them in its cache): the consumer's tRPC and Node types. */
const installed = (name: string) => `${name}@${(JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version}`;
const TOTAL = 10_000;

const project = mkdtempSync(join(tmpdir(), 'client-consumer-'));
let app: TestApp | null = null;

afterAll(async () => {
  await app?.close();
  rmSync(project, { recursive: true, force: true });
});

test('packed, installed in an empty project, type-checked and run: 10,000 events across a restart, each stored once, every receipt verified, read back; signed events too', async () => {
  const packed = await run('npm', ['pack', '--pack-destination', project, '--silent'], { cwd: join(ROOT, 'packages', 'client'), maxBuffer: 16 << 20 });
  const tarball = packed.stdout.trim().split('\n').at(-1) as string;
  expect(readdirSync(project)).toContain(tarball);

  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', `./${tarball}`, installed('@trpc/client'), installed('@trpc/server'), installed('@types/node')], { cwd: project, maxBuffer: 16 << 20 });
  copyFileSync(join(__dirname, 'consumer', 'program.mts'), join(project, 'program.mts'));
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, skipLibCheck: false, types: ['node'], outDir: 'out' },
    files: ['program.mts'],
  }));
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const checked = await run(process.execPath, [tsc, '-p', project], { cwd: project }).then(() => '', (error: unknown) => (error as { stdout: string }).stdout);
  expect(checked).toBe('');
  // A browser project (DOM, no Node types) type-checks against the same declarations: none of them needs Node's
  // (`ESNext.Disposable`: @trpc/server's own declarations name `Disposable`).
  writeFileSync(join(project, 'browser.ts'), "import { AuditLedgerClient, DeliveryQueue, producerSigner } from '@audit-ledger/client';\nimport type { AppRouter } from '@audit-ledger/client/router';\nconst key = (await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify'])) as CryptoKeyPair;\nconst producer = await producerSigner(key.privateKey, { organizationId: '', producerKey: '' });\nconst client = new AuditLedgerClient({ url: location.origin, apiKey: 'alk_', producer, verify: { verifierKey: '', organization: '' } });\nexport const queue = new DeliveryQueue(client);\nexport type Router = AppRouter;\n");
  writeFileSync(join(project, 'tsconfig.browser.json'), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'esnext', moduleResolution: 'bundler', lib: ['ES2022', 'ESNext.Disposable', 'DOM'], types: [], strict: true, skipLibCheck: false, noEmit: true },
    files: ['browser.ts'],
  }));
  const browserChecked = await run(process.execPath, [tsc, '-p', join(project, 'tsconfig.browser.json')], { cwd: project }).then(() => '', (error: unknown) => (error as { stdout: string }).stdout);
  expect(browserChecked).toBe('');
  // The CommonJS build loads too, with the same names.
  const cjs = await run(process.execPath, ['-e', 'const c = require("@audit-ledger/client"); console.log(Object.keys(c).sort().join(","))'], { cwd: project });
  expect(cjs.stdout).toContain('AuditLedgerClient,AuditLedgerError,DeliveryQueue');
  expect(cjs.stdout).toContain('generateProducerKey');

  const service = await startTestApp({ label: 'client_package' });
  app = service;
  const org = await service.org({ monthlyCap: TOTAL + 100 }); // the free plan's cap is TOTAL: room for the signed ones
  const signing = await service.key(org.id);
  const port = String(await freePort());
  const env = { MONGODB_URI: process.env.MONGODB_URI ?? '', MONGODB_DB: service.dbName, PORT: port };
  let server: ServerProcess = await startServerProcess(env);

  const program = spawn(process.execPath, [join(project, 'out', 'program.mjs')], {
    cwd: project,
    env: { ...process.env, URL: server.url, API_KEY: org.key, SIGNING_API_KEY: signing.key, VERIFIER_KEY: TEST_LEDGER_SIGNER.text, ORGANIZATION: org.id, TOTAL: String(TOTAL), TAG: 'packaged' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  program.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = createInterface({ input: program.stdout });
  const output: string[] = [];
  const exited = once(program, 'exit');
  for await (const line of lines) {
    output.push(line);
    if (line !== 'HALF') continue;
    // Half are stored: the service stops with the program about to record the rest, and comes back.
    await server.stop();
    program.stdin.write('stopped\n');
    server = await startServerProcess(env);
  }
  const [code] = await exited;
  await server.stop();
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });

  const summary = JSON.parse(output.at(-1) as string) as Record<string, unknown>;
  expect(summary).toMatchObject({
    recorded: TOTAL,
    ids: TOTAL,
    inOrder: true,
    metadataInOrder: true,
    verified: { verified: TOTAL, removed: 0 },
    pages: { events: 120, newestFirst: true },
    readBack: TOTAL,
    readBackIds: TOTAL,
    readBackMatches: true,
    signed: { bound: true, recorded: 20, verified: 20 },
  });
  expect(summary.retries).toEqual(expect.any(Number));
  expect(summary.retries as number).toBeGreaterThan(0); // the stopped service was met, and waited out
  // Nothing doubled in the database either.
  expect(await service.collections.events.countDocuments({ tenant: org.id, resource_type: 'packaged' })).toBe(TOTAL);
}, 240_000);
