/**
 * The fallback when no MongoDB can be had: the project's FerretDB (scripts/ferretdb.sh) on a local
 * PostgreSQL, built from the Go module proxy on first use. Used by `npm start` and `npm test` when
 * MONGODB_URI is unset and the embedded MongoDB cannot be downloaded (a machine without internet).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const SCRIPT = join(__dirname, '..', '..', 'scripts', 'ferretdb.sh');

function available(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** Why the fallback cannot run here, or null when it can (the script, Go and PostgreSQL's client tools). */
export function localFerretDbMissing(): string | null {
  if (!existsSync(SCRIPT)) return 'scripts/ferretdb.sh is not there';
  for (const command of ['go', 'pg_isready', 'psql']) if (!available(command)) return `${command} is not installed`;
  return null;
}

/**
 * Builds (first time only, a few minutes, with Go's progress on stderr) and starts FerretDB, or finds
 * it running; resolves with its connection string. It keeps running after this process, Ctrl-C
 * included, so that the next start finds it answering: stop it with `bash scripts/ferretdb.sh stop`.
 */
export function startLocalFerretDb(): Promise<string> {
  return new Promise((resolve, reject) => {
    // A process group of its own (detached): Ctrl-C sends SIGINT to the terminal's whole foreground
    // group, and FerretDB, a Go program listening for SIGINT, would stop with `npm start`. The script
    // itself is awaited below, so nothing is left to unref.
    const child = spawn('bash', [SCRIPT, 'start'], { detached: true, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      const uri = out.trim().split('\n').pop() ?? '';
      if (code === 0 && uri.startsWith('mongodb://')) resolve(uri);
      else reject(new Error(`scripts/ferretdb.sh start exited with ${code}`));
    });
  });
}
