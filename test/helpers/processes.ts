/** Runs the real `src/main.ts` (and the CLI) in child processes, as an operator would. */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { privateKeyText } from '../../src/domain/ledger/note';
import { TEST_LEDGER_SEED, TEST_LEDGER_SIGNER } from './harness';
import { createInterface } from 'node:readline';

export const ROOT = join(__dirname, '..', '..');
const TSX = ['--import', 'tsx'];

export interface ServerProcess {
  url: string;
  /** Its internal listener, where the other instances forward events (INTERNAL_PORT=0: a free loopback port). */
  internalUrl: string;
  /** The process's metrics address (METRICS_PORT=0: a free loopback port it logs at start). */
  metricsUrl: string;
  child: ChildProcess;
  /** Everything it wrote so far: its log (stdout) and stderr. */
  output(): { stdout: string; stderr: string };
  stop(): Promise<void>;
}

/** The test apps' ledger key, as a key file the server processes share (as an installation's instances do). */
export function testLedgerKeyFile(): string {
  const path = join(tmpdir(), `audit-ledger-test-key-${process.pid}`);
  if (!existsSync(path)) writeFileSync(path, `${privateKeyText(TEST_LEDGER_SIGNER.name, TEST_LEDGER_SEED)}\n`, { mode: 0o600 });
  return path;
}

/** Starts `src/main.ts` on a free port and resolves once it logs that it is listening. */
export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...TSX, 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env, PORT: '0', HOST: '127.0.0.1', METRICS_PORT: '0', LOG_LEVEL: 'info',
      LEDGER_NAME: TEST_LEDGER_SIGNER.name, LEDGER_SIGNING_KEY_FILE: testLedgerKeyFile(), LEDGER_CHECKPOINT_INTERVAL_MS: '200', ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const lines = createInterface({ input: child.stdout }); // stdout is piped above
  const { port, metricsPort, internalPort } = await new Promise<{ port: number; metricsPort: number; internalPort: number }>((resolve, reject) => {
    const timer = setTimeout(() => { reject(new Error(`server did not start: ${stderr}`)); }, 60_000);
    child.once('exit', (code) => { reject(new Error(`server exited with ${code}: ${stderr}`)); });
    lines.on('line', (line) => {
      try {
        const entry = JSON.parse(line) as { port?: number; metricsPort?: number; internalPort?: number };
        if (entry.port && entry.metricsPort && entry.internalPort) {
          clearTimeout(timer);
          resolve({ port: entry.port, metricsPort: entry.metricsPort, internalPort: entry.internalPort });
        }
      } catch {
        // not a log line
      }
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    internalUrl: `http://127.0.0.1:${internalPort}`,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    child,
    output: () => ({ stdout, stderr }),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** Runs the command line to completion, through its `bin` launcher (what `npx audit-ledger` runs). */
export async function runCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return runCommand(process.execPath, ['bin/audit-ledger.cjs', ...args], env);
}

/** Runs a program from the repository's root to completion. */
export async function runCommand(program: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(program, args, {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const [code] = (await once(child, 'exit')) as [number];
  return { code, stdout, stderr };
}

export interface WitnessProcess {
  /** Its submission prefix (POST <url>/add-checkpoint). */
  url: string;
  /** Its cosignature/v1 verifier key. */
  vkey: string;
  statePath: string;
  stop(): Promise<void>;
}

/**
 * Runs `audit-ledger witness serve` on a free loopback port, following the logs of `config` (lines
 * `log <origin> <verifier key>`); its key and state live in `dir`.
 */
export async function startWitnessProcess(dir: string, name: string, config: string): Promise<WitnessProcess> {
  const stem = name.replace(/[^A-Za-z0-9.-]/g, '_');
  const configPath = join(dir, `${stem}.config`);
  writeFileSync(configPath, config);
  const statePath = join(dir, `${stem}.state.json`);
  const child = spawn(process.execPath, ['bin/audit-ledger.cjs', 'witness', 'serve', '--key', join(dir, `${stem}.key`), '--name', name, '--config', configPath, '--state', statePath, '--listen', '127.0.0.1:0'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let stdout = '';
  const { url, vkey } = await new Promise<{ url: string; vkey: string }>((resolve, reject) => {
    const timer = setTimeout(() => { reject(new Error(`witness did not start: ${stderr}`)); }, 60_000);
    child.once('exit', (code) => { reject(new Error(`witness exited with ${code}: ${stderr}`)); });
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const key = /verifier key[^:]*: (\S+)/.exec(stdout);
      const listening = /Listening on (http:\/\/\S+)\/add-checkpoint/.exec(stdout);
      if (key && listening) {
        clearTimeout(timer);
        resolve({ url: listening[1] as string, vkey: key[1] as string });
      }
    });
  });
  return {
    url,
    vkey,
    statePath,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
