/**
 * One run of the model: a fresh system (database, service, owner, key) and a fresh model, the commands
 * in order through fast-check's asyncModelRun (each command checks the promises after itself), the slow
 * checks once more at the end when they did not follow every step, and everything closed and the
 * database dropped, whatever happened. The property test and the regression tests both run this.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { checkLedger } from './check';
import { checkLevel } from './commands';
import { stepLog as log } from './log';
import { type Model, newModel, START_TIME } from './model';
import { System } from './system';


export async function runModel(commands: Iterable<fc.AsyncCommand<Model, System>>): Promise<void> {
  const tag = randomBytes(3).toString('hex');
  const began = Date.now();
  const system = await System.start(START_TIME);
  const model: Model = newModel(tag);
  log(`run ${tag} on ${system.dbName} (set up in ${Date.now() - began} ms)`);
  try {
    await fc.asyncModelRun(() => ({ model, real: system }), commands);
    if (checkLevel.value !== 'every') await checkLedger(model, system, 'the last step');
  } finally {
    await system.dispose();
    for (const note of system.notes) log(`note: ${note}`);
  }
}
