/**
 * The command line, `npx audit-ledger <command>` (or `npm run -s cli -- <command>`): a table of commands,
 * each with its own options and `--help`. With --json every command prints exactly one JSON document on
 * stdout, its answer or `{ "error": … }`; without it, a short human-readable answer. Errors go to
 * stderr; exit code 1 for a failure, 2 for a mistake in the call.
 */
import { parseArgs } from 'node:util';
import { type Command, flag, type Output, UsageError, type Values } from './command';
import { adminCommands } from './commands/admin';
import { ledgerInstallationCommands } from './commands/ledgerInstallation';
import { clientCommands } from './commands/client';
import { witnessCommands } from './commands/witness';
import { streamCommands } from './commands/stream';
import { CliFailure, connectionProblem, fileProblem, unknownOption } from './failure';

const COMMANDS: readonly Command[] = [...adminCommands, ...ledgerInstallationCommands, ...clientCommands, ...streamCommands, ...witnessCommands];
const COMMON = { json: flag, help: { type: 'boolean', short: 'h' } } as const;

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.words.length));
  return [
    'Usage: audit-ledger <command> [options] [--json]      (audit-ledger <command> --help for its options)',
    '',
    ...COMMANDS.map((c) => `  ${c.words.padEnd(width)}  ${c.summary}`),
    '',
    'Commands on the database use MONGODB_URI, or the embedded database under DATA_DIR (as npm start does).',
  ].join('\n');
}

function help(command: Command): string {
  return [`Usage: audit-ledger ${[command.words, command.synopsis, '[--json]'].filter(Boolean).join(' ')}`, '', command.summary, ...(command.details ? ['', command.details] : [])].join('\n');
}

/** The command named by the first words of `argv`, and the rest of the arguments. */
function find(argv: string[]): { command: Command; rest: string[] } | null {
  for (const command of COMMANDS) {
    const words = command.words.split(' ');
    if (words.every((word, i) => argv[i] === word)) return { command, rest: argv.slice(words.length) };
  }
  return null;
}

/** parseArgs' complaint in the command line's words: an unknown option answered with the closest valid one. */
function parseProblem(error: unknown, command: Command): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof Error && 'code' in error ? error.code : undefined;
  const unknown = /Unknown option '([^']+)'/.exec(message);
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown?.[1]) return unknownOption(unknown[1], [...Object.keys(command.options), ...Object.keys(COMMON)], command.words);
  const missing = /Option '(--[\w-]+)[^']*' argument missing/.exec(message);
  if (missing?.[1]) return `${missing[1]} needs a value`;
  const ambiguous = /Option '(--[\w-]+)[^']*' argument is ambiguous/.exec(message);
  if (ambiguous?.[1]) return `${ambiguous[1]} needs a value; one that starts with '-' is written ${ambiguous[1]}=VALUE`;
  const flagged = /Option '(--[\w-]+)' does not take an argument/.exec(message);
  if (flagged?.[1]) return `${flagged[1]} is a flag and takes no value`;
  return message;
}

async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const fail = (message: string, code: number, helpText?: string): number => {
    if (json) process.stdout.write(`${JSON.stringify({ error: message })}\n`);
    process.stderr.write(`${message}${helpText ? `\n\n${helpText}` : ''}\n`);
    return code;
  };
  const found = find(argv);
  if (!found) {
    if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h') {
      process.stdout.write(`${usage()}\n`);
      return argv.length === 0 ? 2 : 0;
    }
    return fail(`Unknown command: ${argv.filter((a) => !a.startsWith('-')).slice(0, 2).join(' ')}`, 2, usage());
  }
  const { command, rest } = found;
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: rest, options: { ...command.options, ...COMMON }, allowPositionals: true, strict: true }));
  } catch (error) {
    return fail(parseProblem(error, command), 2, help(command));
  }
  if (values.help === true) {
    process.stdout.write(`${help(command)}\n`);
    return 0;
  }
  const { min, max } = command.positionals ?? { min: 0, max: 0 };
  if (positionals.length < min || positionals.length > max) return fail(`${command.words} takes ${min === max ? min : `${min} to ${max}`} argument(s): ${command.synopsis}`, 2, help(command));
  let output: Output;
  try {
    output = await command.run(values, positionals);
  } catch (error) {
    if (error instanceof UsageError) return fail(error.message, 2, help(command));
    if (error instanceof CliFailure) return fail(error.message, 1);
    const message = fileProblem(error, values) ?? connectionProblem(error, values) ?? (error instanceof Error ? error.message : String(error));
    return fail(message, 1);
  }
  if (json) process.stdout.write(`${JSON.stringify(output.json)}\n`);
  else if (output.text) process.stdout.write(`${output.text}\n`);
  return output.exitCode ?? 0;
}

void main(process.argv.slice(2)).then((code) => process.exit(code));
