/**
 * The folder layout is the architecture: no import cycles, and layers that only look down. Checked on
 * the real import graph (madge), so a new import that breaks a rule fails here, naming it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import madge from 'madge';

const SRC = join(__dirname, '..', '..', 'src');

/** What each layer may not import. `domain` is pure; nothing below `http` knows about HTTP. */
const FORBIDDEN: Record<string, string[]> = {
  domain: ['client', 'config', 'db', 'ledger', 'witness', 'ingest', 'export', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  // The verification client, just above domain: what a separate npm package will publish as it is, so
  // domain/ and itself alone (checked by name below too); every layer above it may use its checks.
  client: ['config', 'db', 'ledger', 'witness', 'ingest', 'export', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  config: ['db', 'ledger', 'witness', 'ingest', 'export', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  db: ['ledger', 'witness', 'ingest', 'export', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  ledger: ['witness', 'ingest', 'export', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  // The witness anyone runs on a machine of their own (`audit-ledger witness serve`): the ledger's
  // formats from domain/ and nothing of the service; only its command uses it, and the service's
  // ledger reaches witnesses over HTTP, never by importing one.
  witness: ['client', 'config', 'db', 'ledger', 'ingest', 'export', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  ingest: ['witness', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  export: ['witness', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  // Delivers log streams: reads the ledger and events, knows the live instances; nothing above it.
  streams: ['witness', 'export', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  services: ['witness', 'trpc', 'http', 'cli', 'dashboard'],
  trpc: ['witness', 'http', 'cli', 'dashboard'],
  http: ['witness', 'cli', 'dashboard'],
};

let graph: Record<string, string[]>;
let cycles: string[][];
beforeAll(async () => {
  const result = await madge(SRC, {
    fileExtensions: ['ts', 'tsx'],
    tsConfig: join(__dirname, '..', '..', 'tsconfig.json'),
    excludeRegExp: [/^dashboard\//],
  });
  graph = result.obj();
  cycles = result.circular();
});

test('the import graph covers the service', () => {
  // A broken resolver would find no edges and let every rule below pass.
  expect(Object.keys(graph).length).toBeGreaterThan(50);
  expect(graph['http/app.ts']).toEqual(expect.arrayContaining(['http/restApi.ts', 'services/container.ts']));
  // Every folder of src/ has its rules below, but cli/, the top (a new folder is not left outside them).
  const folders = new Set(Object.keys(graph).filter((file) => file.includes('/')).map((file) => file.split('/')[0] ?? ''));
  expect([...folders].filter((folder) => folder !== 'cli' && !(folder in FORBIDDEN))).toEqual([]);
});

test('no import cycles', () => {
  expect(cycles).toEqual([]);
});

test('layers only look down', () => {
  const layerOf = (file: string) => file.split('/')[0] ?? '';
  const violations = Object.entries(graph).flatMap(([file, deps]) =>
    deps.filter((dep) => FORBIDDEN[layerOf(file)]?.includes(layerOf(dep))).map((dep) => `${file} → ${dep}`),
  );
  expect(violations).toEqual([]);
});

test('nothing above db/ sees the collections but the composition roots', () => {
  // Above db/, the database is reached through stores bound to one organization (EventReader, OrgApiKeys,
  // TenantLedgerStore) or named for one system-wide job (src/db/stores.ts); only the composition root
  // and the admin command line's opener build them from the collections.
  const roots = new Set(['services/container.ts', 'cli/adminDatabase.ts']);
  const violations = Object.entries(graph)
    .filter(([file, deps]) => !file.startsWith('db/') && !roots.has(file) && deps.includes('db/database.ts'))
    .map(([file]) => file);
  expect(violations).toEqual([]);
});

test('the composition root takes every repository from Stores, and no surface takes the whole container', () => {
  // services/container.ts builds Stores from the collections and nothing else of db/ (ActiveKeys wraps a store).
  const fromDb = (graph['services/container.ts'] ?? []).filter((dep) => dep.startsWith('db/'));
  expect(fromDb.sort()).toEqual(['db/apiKeyRepository.ts', 'db/database.ts', 'db/stores.ts']);
  // HTTP takes HttpServices, the tRPC context ApiServices, main.ts the jobs: `Parts` (every part) is the tests'.
  const partsUsers = Object.keys(graph).filter((file) => file !== 'services/container.ts' && /\bParts\b/.test(readFileSync(join(SRC, file), 'utf8')));
  expect(partsUsers).toEqual([]);
});

test('every background job is declared once: no timer loop outside the lifecycle but the ones it runs', () => {
  // services/jobs.ts runs the periodic jobs; the ledger's rounds, the stream runs and the instance
  // heartbeat keep their own cadence (they are more than a timer), declared as jobs in the container.
  const loops = Object.keys(graph).filter((file) => /\bsetInterval\(/.test(readFileSync(join(SRC, file), 'utf8')));
  expect(loops.sort()).toEqual(['ingest/instances.ts', 'ledger/integrator.ts', 'services/jobs.ts', 'streams/deliverer.ts']);
});

test('the pure cores import no I/O: the ledger\'s tree growth and the writer\'s placement', () => {
  const io = /^(db|http|ledger|ingest|services|trpc|cli|export)\//;
  for (const file of ['ingest/placement.ts', 'domain/ledger/tiles.ts', 'domain/eventFields.ts', 'domain/limited.ts']) {
    expect({ file, deps: (graph[file] ?? []).filter((dep) => io.test(dep)) }).toEqual({ file, deps: [] });
    expect(graph[file]).toBeDefined();
  }
});

/** The files of src/ the dashboard's own files import (it is left out of the graph above: its tsconfig differs). */
function dashboardImports(): string[] {
  const dashboard = join(SRC, 'dashboard');
  const files = readdirSync(dashboard, { recursive: true, encoding: 'utf8' }).filter((file) => /\.tsx?$/.test(file));
  return files.flatMap((file) => {
    const path = join(dashboard, file);
    return [...readFileSync(path, 'utf8').matchAll(/^import [^;]*? from '(\.[^']+)';/gm)].map((m) => relative(SRC, resolve(dirname(path), m[1] as string)));
  });
}

test('the client imports nothing of ours outside domain/ and itself', () => {
  const files = Object.keys(graph).filter((file) => file.startsWith('client/'));
  expect(files).toEqual(expect.arrayContaining(['client/index.ts', 'client/exportCheck.ts', 'client/retentionCheck.ts', 'client/webVerify.ts']));
  const outside = files.flatMap((file) => (graph[file] ?? []).filter((dep) => !/^(domain|client)\//.test(dep)).map((dep) => `${file} → ${dep}`));
  expect(outside).toEqual([]);
});

test('what the browser runs of the client uses no Node-only module: no node:* import, no Buffer', () => {
  // The client's files the dashboard imports and those the client package bundles, and everything they import in turn.
  const entries = [...new Set([...dashboardImports().filter((file) => file.startsWith('client/')).map((file) => `${file}.ts`), ...packageCoreImports()])];
  expect(entries).toContain('domain/ledger/witnessFormats.ts');
  expect(entries).toEqual(expect.arrayContaining(['client/webVerify.ts', 'client/retentionCheck.ts']));
  const browser = new Set<string>();
  const visit = (file: string) => {
    if (browser.has(file)) return;
    browser.add(file);
    for (const dep of graph[file] ?? []) visit(dep);
  };
  entries.forEach(visit);
  const nodeOnly = [...browser].flatMap((file) => {
    const text = readFileSync(join(SRC, file), 'utf8');
    const imports = [...text.matchAll(/^import [^;]*? from '([^']+)';/gm)].map((m) => m[1] as string).filter((name) => name.startsWith('node:'));
    return [...imports, ...(/\bBuffer\b/.test(text) ? ['Buffer'] : [])].map((what) => `${file}: ${what}`);
  });
  expect(nodeOnly).toEqual([]);
});

const PACKAGE_SRC = join(__dirname, '..', '..', 'packages', 'client', 'src');

/** Each import of the client package's sources: file, specifier, and whether it is for types only. */
function packageImports(): { file: string; specifier: string; typeOnly: boolean }[] {
  return readdirSync(PACKAGE_SRC)
    .filter((name) => name.endsWith('.ts'))
    .flatMap((file) => [...readFileSync(join(PACKAGE_SRC, file), 'utf8').matchAll(/^(import|export)( type)? [^;]*? from ['"]([^'"]+)['"];/gm)].map((m) => ({ file, specifier: m[3] as string, typeOnly: m[2] !== undefined })));
}

/** The files of src/ the client package bundles (its run-time imports of the verification core). */
function packageCoreImports(): string[] {
  return packageImports().filter((i) => !i.typeOnly && i.specifier.startsWith('../')).map((i) => relative(SRC, resolve(PACKAGE_SRC, i.specifier)));
}

test('the client package (packages/client) imports its own modules and, of the service, only the browser-safe verification core, and the router as a type', () => {
  const imports = packageImports();
  expect(imports).toContainEqual({ file: 'rest.ts', specifier: './errors.ts', typeOnly: false }); // the pattern does find imports
  expect(imports).toContainEqual({ file: 'queue.ts', specifier: './rest.ts', typeOnly: true });
  const foreign = imports
    .filter(({ file, specifier, typeOnly }) => {
      if (/^\.\/[a-zA-Z]+\.ts$/.test(specifier)) return false;
      if (file === 'router.ts' && typeOnly && specifier === '../../../src/trpc/router.ts') return false;
      return typeOnly || !/^\.\.\/\.\.\/\.\.\/src\/(client|domain)\//.test(specifier);
    })
    .map(({ file, specifier }) => `${file} → ${specifier}`);
  expect(foreign).toEqual([]);
  expect(packageCoreImports()).toEqual(expect.arrayContaining(['client/webVerify.ts']));
  const own = readdirSync(PACKAGE_SRC).filter((name) => name.endsWith('.ts') && /\bBuffer\b|\brequire\(|\bimport\(/.test(readFileSync(join(PACKAGE_SRC, name), 'utf8')));
  expect(own).toEqual([]);
  const manifest = JSON.parse(readFileSync(join(PACKAGE_SRC, '..', 'package.json'), 'utf8')) as { dependencies?: object };
  expect(manifest.dependencies ?? {}).toEqual({});
});
