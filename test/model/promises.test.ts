/**
 * A model of the service's promises (issue 34): random sequences of writes (single, batch, with an
 * Idempotency-Key, through a second instance, some with actions in the service's own namespace),
 * replays of a key with the same and a changed body and of an expired key, erasures by actor and by id
 * with and without legal holds, holds placed and released, retention policies (through the owner's
 * dashboard or /v1/retention with a `retention:manage` key), the clock moved and the prune job run,
 * restarts, the operator's reseal, a stream from sequence number 1 and a database writer planting forged
 * rows behind the service's back (plantForeign), against the real server and
 * database; after every step the service is held to a plain in-memory model (model.ts; the commands in
 * commands.ts, the checks in check.ts).
 *
 * `npm test` runs a few sequences with a fixed seed; `npm run test:model -- --runs N --seed S
 * --max-commands M` runs more. A failing run prints its seed, its replay path and the shrunk sequence
 * of commands (fast-check shrinks until MODEL_TIME_LIMIT_S is spent, then reports the smallest failure
 * it found). Knobs (environment): MODEL_RUNS (3), MODEL_SEED (fixed), MODEL_MAX_COMMANDS (15),
 * MODEL_TIME_LIMIT_S (150: no new run starts after it; the runs not made are said on stderr), MODEL_CHECKS (`removals`, the default: the
 * ledger's verifiers and the stream after removals, replays, restarts, second writers and reseals, and
 * at the end of each run; `every`: after every step),
 * MODEL_PATH and MODEL_REPLAY_PATH (replay one failure: its `path` and the counterexample's `replayPath`,
 * with its seed and the same MODEL_WITHOUT), MODEL_NO_SHRINK=1, MODEL_LOG=1 (steps on stderr),
 * MODEL_WITHOUT (command kinds to leave out, comma-separated, and `lookalike`) and MODEL_IGNORE (a
 * regular expression of problems not to fail on): to look past a known bug that every run finds first.
 */
import fc from 'fast-check';
import { checkLevel, commandArbitrary } from './commands';
import { runModel } from './runner';

const numeric = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value)) throw new Error(`${name} must be a number, not ${process.env[name] ?? ''}`);
  return value;
};
const runs = numeric('MODEL_RUNS', 3);
const seed = numeric('MODEL_SEED', 7);
const maxCommands = numeric('MODEL_MAX_COMMANDS', 15);
const timeLimitMs = numeric('MODEL_TIME_LIMIT_S', 150) * 1000;
const path = process.env.MODEL_PATH;
const replayPath = process.env.MODEL_REPLAY_PATH;
const without = new Set((process.env.MODEL_WITHOUT ?? '').split(',').map((name) => name.trim()).filter(Boolean));
checkLevel.value = process.env.MODEL_CHECKS === 'every' ? 'every' : 'removals';

test(`the service keeps its promises over ${runs} random sequences of up to ${maxCommands} steps (seed ${seed})`, async () => {
  // No run starts after the deadline. Before any failure, the runs left are let through unrun (the ones
  // made passed; a skip would count toward fast-check's limit of skipped runs and fail the property).
  // Once a run failed, the shrinking's candidates left are skipped: the smallest failure found by then
  // is the one reported.
  const deadline = Date.now() + timeLimitMs;
  let failed = false;
  let unrun = 0;
  await fc.assert(
    fc.asyncProperty(fc.commands([commandArbitrary(without)], { maxCommands, size: 'max', ...(replayPath ? { replayPath } : {}) }), async (commands) => {
      if (Date.now() >= deadline) {
        fc.pre(!failed);
        unrun += 1;
        return;
      }
      try {
        await runModel(commands);
      } catch (error) {
        failed = true;
        throw error;
      }
    }),
    { seed, numRuns: runs, ...(path ? { path } : {}), endOnFailure: process.env.MODEL_NO_SHRINK === '1', verbose: fc.VerbosityLevel.Verbose },
  );
  if (unrun) process.stderr.write(`model test: ${unrun} of ${runs} runs were not made: MODEL_TIME_LIMIT_S (${timeLimitMs / 1000} s) was spent\n`);
}, timeLimitMs + 600_000);
