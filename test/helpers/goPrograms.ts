/**
 * The Go programs the suites run (the reference verifier, the test witness, the S3 gateway), built once
 * per source tree: each binary is named by a hash of what it is built from (its Go sources, go.mod,
 * go.sum and the Go version), under `.cache/go-bin/`, so an unchanged tree builds nothing. The
 * integration project's globalSetup builds them all; a suite asks for a path with `goProgram(name)`.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
export const GO_BIN_DIR = join(ROOT, '.cache', 'go-bin');

interface GoProgram {
  /** The module directory `go build` runs in. */
  cwd: string;
  /** The package to build, as `go build` names it. */
  pkg: string;
  /** The files whose content decides the binary (relative to the repository). */
  sources: () => string[];
}

function goFilesUnder(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...goFilesUnder(path));
    else if (entry.name.endsWith('.go') || entry.name === 'go.mod' || entry.name === 'go.sum') files.push(path);
  }
  return files;
}

const PROGRAMS = {
  verifier: { cwd: join(ROOT, 'verifier'), pkg: '.', sources: () => goFilesUnder(join(ROOT, 'verifier')) },
  testwitness: { cwd: join(ROOT, 'verifier'), pkg: './cmd/testwitness', sources: () => goFilesUnder(join(ROOT, 'verifier')) },
  // Built from the Go module proxy at the version tools/versitygw/go.mod pins.
  versitygw: { cwd: join(ROOT, 'tools', 'versitygw'), pkg: 'github.com/versity/versitygw/cmd/versitygw', sources: () => goFilesUnder(join(ROOT, 'tools', 'versitygw')) },
} satisfies Record<string, GoProgram>;

export type GoProgramName = keyof typeof PROGRAMS;
export const GO_PROGRAM_NAMES = Object.keys(PROGRAMS) as GoProgramName[];

let goVersion: Promise<string> | undefined;

/** Where `name`'s binary for the current sources lives (built or not). */
async function binaryPath(name: GoProgramName): Promise<string> {
  const program: GoProgram = PROGRAMS[name];
  goVersion ??= run('go', ['env', 'GOVERSION']).then(({ stdout }) => stdout.trim());
  const hash = createHash('sha256').update(`${await goVersion}\n${program.pkg}\n`);
  for (const file of program.sources().sort()) hash.update(`${relative(ROOT, file)}\n`).update(readFileSync(file)).update('\n');
  return join(GO_BIN_DIR, `${name}-${hash.digest('hex').slice(0, 16)}`);
}

/**
 * The path of `name`'s binary, built first if this source tree has none yet (globalSetup has built it
 * unless its build failed: then this build fails again, here, in the suite that needs it).
 */
export async function goProgram(name: GoProgramName): Promise<string> {
  const binary = await binaryPath(name);
  if (existsSync(binary)) return binary;
  mkdirSync(GO_BIN_DIR, { recursive: true });
  // Built beside and renamed, so a concurrent reader never sees half a binary.
  const partial = `${binary}.${process.pid}.tmp`;
  try {
    // Modules come from the Go module proxy the first time (the go.sum files pin them).
    await run('go', ['build', '-o', partial, PROGRAMS[name].pkg], { cwd: PROGRAMS[name].cwd, timeout: 600_000 });
    renameSync(partial, binary);
    rmSync(`${binary}.failed`, { force: true });
  } catch (error) {
    rmSync(partial, { force: true });
    const stderr = (error as { stderr?: string }).stderr ?? '';
    const reason = `go build of ${name} failed: ${stderr || (error instanceof Error ? error.message : 'unknown')}`;
    writeFileSync(`${binary}.failed`, `${new Date().toISOString()} ${reason}\n`);
    throw new Error(reason, { cause: error });
  }
  // Older trees' binaries of this program are of no more use.
  for (const file of readdirSync(GO_BIN_DIR)) {
    if (file.startsWith(`${name}-`) && !file.endsWith('.tmp') && !file.startsWith(basename(binary))) rmSync(join(GO_BIN_DIR, file), { force: true });
  }
  return binary;
}

/**
 * Builds every program whose binary is missing, in parallel. A failed build is reported, not thrown: only
 * the suites that need it fail (each tries again). One that failed for this tree before (no module proxy
 * on this machine, say) is not tried here again for an hour (outside CI), so that no run waits on it for nothing.
 */
export async function buildGoPrograms(report: (line: string) => void): Promise<void> {
  await Promise.all(GO_PROGRAM_NAMES.map(async (name) => {
    try {
      const failed = `${await binaryPath(name)}.failed`;
      // Trusted for an hour, and never in CI: a module proxy that was slow once is tried again.
      if (!process.env.CI && existsSync(failed) && Date.now() - statSync(failed).mtimeMs < 3_600_000) {
        report(`\n${name}: not built (it failed for this source tree before: ${readFileSync(failed, 'utf8').split('\n')[0]}); its suites try again\n`);
        return;
      }
      await goProgram(name);
    } catch (error) {
      report(`\n${name}: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}; its suites try again\n`);
    }
  }));
}
