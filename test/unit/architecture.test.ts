/**
 * The folder layout is the architecture: no import cycles, and layers that only look down. Checked on
 * the real import graph (madge), so a new import that breaks a rule fails here, naming it.
 */
import { join } from 'node:path';
import madge from 'madge';

const SRC = join(__dirname, '..', '..', 'src');

/** What each layer may not import. `domain` is pure; nothing below `http` knows about HTTP. */
const FORBIDDEN: Record<string, string[]> = {
  domain: ['config', 'db', 'ledger', 'witness', 'ingest', 'export', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  config: ['db', 'ledger', 'witness', 'ingest', 'export', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  db: ['ledger', 'witness', 'ingest', 'export', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  ledger: ['witness', 'ingest', 'export', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
  // The witness anyone runs on a machine of their own (`audit-ledger witness serve`): the ledger's
  // formats from domain/ and nothing of the service; only its command uses it, and the service's
  // ledger reaches witnesses over HTTP, never by importing one.
  witness: ['config', 'db', 'ledger', 'ingest', 'export', 'streams', 'services', 'trpc', 'http', 'cli', 'dashboard'],
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

test('the pure cores import no I/O: the ledger\'s tree growth and the writer\'s placement', () => {
  const io = /^(db|http|ledger|ingest|services|trpc|cli|export)\//;
  for (const file of ['ingest/placement.ts', 'domain/ledger/tiles.ts', 'domain/eventFields.ts', 'domain/limited.ts']) {
    expect({ file, deps: (graph[file] ?? []).filter((dep) => io.test(dep)) }).toEqual({ file, deps: [] });
    expect(graph[file]).toBeDefined();
  }
});
