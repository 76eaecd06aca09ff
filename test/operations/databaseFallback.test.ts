/**
 * The embedded-database fallback is decided once and remembered in DATA_DIR: the first start that cannot
 * download MongoDB says so in one line (no stack trace), writes `database-fallback.json` and serves from
 * the bundled FerretDB; later starts and CLI commands go there at once, without a download attempt. The
 * download host is a local server that answers 404 and counts the requests it gets.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { fallbackPath, readFallback, rememberFallback } from '../../src/db/connect';
import { localFerretDbMissing } from '../../src/db/localFerretDb';
import { mongoUri, uniqueDbName } from '../helpers/harness';
import { ROOT, runCli, startServerProcess } from '../helpers/processes';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'dbfallback-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the remembered decision', () => {
  test('is written beside embedded-mongodb.json and read back', () => {
    const dataDir = join(dir, 'unit', 'data');
    expect(readFallback(dataDir)).toBeUndefined();
    rememberFallback(dataDir, 'getaddrinfo ENOTFOUND fastdl.mongodb.org', new Date('2026-01-02T03:04:05Z'));
    expect(fallbackPath(dataDir)).toBe(join(dataDir, 'database-fallback.json'));
    expect(readFallback(dataDir)).toEqual({ database: 'ferretdb', reason: 'getaddrinfo ENOTFOUND fastdl.mongodb.org', decidedAt: '2026-01-02T03:04:05.000Z' });
  });

  test('an unreadable or foreign file counts as no decision (the download is tried again)', () => {
    const dataDir = join(dir, 'unit2');
    rememberFallback(dataDir, 'x');
    writeFileSync(fallbackPath(dataDir), 'not json');
    expect(readFallback(dataDir)).toBeUndefined();
    writeFileSync(fallbackPath(dataDir), '{"database":"embedded-mongodb"}');
    expect(readFallback(dataDir)).toBeUndefined();
  });
});

// The fallback needs the project's FerretDB (Go, PostgreSQL), as the suite's own database on CI does.
const ferretDbHere = localFerretDbMissing() === null && existsSync(join(ROOT, '.cache', 'ferretdb', 'bin'));
(ferretDbHere ? describe : describe.skip)('npm start and the CLI without MONGODB_URI, offline', () => {
  let mirror: Server;
  let requests = 0;
  let client: MongoClient;
  const dbName = uniqueDbName('fallback');
  const dataDir = () => join(dir, 'offline', 'data');
  const env = (): Record<string, string> => ({
    MONGODB_URI: '',
    MONGODB_DB: dbName,
    DATA_DIR: dataDir(),
    MONGOMS_DOWNLOAD_MIRROR: `http://127.0.0.1:${(mirror.address() as { port: number }).port}`,
    MONGOMS_USE_HTTP: 'true',
    MONGOMS_DOWNLOAD_DIR: join(dir, 'binaries'),
    MONGOMS_RUNTIME_DOWNLOAD: 'true',
  });

  beforeAll(async () => {
    mirror = createServer((_req, res) => {
      requests += 1;
      res.writeHead(404).end();
    }).listen(0, '127.0.0.1');
    await once(mirror, 'listening');
    client = await MongoClient.connect(mongoUri());
  });
  afterAll(async () => {
    mirror.close();
    await client.db(dbName).dropDatabase().catch(() => undefined);
    await client.close();
  });

  /** Starts the service, checks it answers, stops it; resolves with its log lines and stderr. */
  async function startOnce(): Promise<{ lines: { level: number; msg: string; database?: string }[]; stderr: string }> {
    const server = await startServerProcess(env());
    try {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await server.stop();
    }
    const { stdout, stderr } = server.output();
    const lines = stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { level: number; msg: string; database?: string });
    return { lines, stderr };
  }

  /** The log lines that say which database serves: one, and the start-up line's field agrees. */
  function databaseLines(lines: { msg: string; database?: string }[]): string[] {
    expect(lines.find((line) => line.msg.startsWith('Audit Ledger listening'))?.database).toBe('ferretdb');
    return lines.filter((line) => line.msg.startsWith('database:')).map((line) => line.msg);
  }

  test('the first start tries the download once, says so in one line, remembers it and serves from FerretDB', async () => {
    const { lines, stderr } = await startOnce();
    expect(requests).toBeGreaterThan(0);
    expect(readFallback(dataDir())?.database).toBe('ferretdb');
    const said = databaseLines(lines);
    expect(said).toHaveLength(1);
    expect(said[0]).toContain('the bundled FerretDB');
    expect(said[0]).toContain(fallbackPath(dataDir()));
    expect(stderr).not.toMatch(/DownloadError|\n\s+at /);
  }, 240_000);

  test('later starts and CLI commands use FerretDB at once: no download request', async () => {
    requests = 0;
    const { lines, stderr } = await startOnce();
    const said = databaseLines(lines);
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(`delete ${fallbackPath(dataDir())} to try the download again`);
    expect(stderr).not.toMatch(/DownloadError|\n\s+at /);
    const cli = await runCli(['org', 'list'], env());
    expect({ code: cli.code, stderr: cli.stderr }).toEqual({ code: 0, stderr: '' });
    expect(requests).toBe(0);
  }, 180_000);
});
