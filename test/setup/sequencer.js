/**
 * The order the suites start in. jest orders them by their last run's durations when it has them, and
 * otherwise by file size, which on a fresh clone (CI) starts the longest suites, small files that move
 * a lot of data, late: the run then ends on one worker with the other idle. These are the suites that
 * take longest (test-artifacts/jest-results.json of a CI run), started first, longest first; the rest
 * keep jest's order.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- jest loads this file as CommonJS, untransformed
const Sequencer = require('@jest/test-sequencer').default;

// The two that move the most data (export memory, the back-fill) are not started together: the model
// suites run on the other worker meanwhile, so the two share FerretDB for less of their time.
const LONGEST_FIRST = [
  'test/events/export.memory.test.ts',
  'test/model/promises.test.ts',
  'test/model/regressions.test.ts',
  'test/streams/backfill.test.ts',
  'test/retention/retention.test.ts',
  'test/client/package.test.ts',
  'test/streams/takeover.test.ts',
  'test/instances/churn.test.ts',
  'test/client/thirdPartyGenerators.test.ts',
];

class LongestFirst extends Sequencer {
  sort(tests) {
    const rank = (test) => {
      const i = LONGEST_FIRST.findIndex((path) => test.path.endsWith(path));
      return i === -1 ? LONGEST_FIRST.length : i;
    };
    // Array.prototype.sort is stable: the others keep the order jest gave them.
    return [...super.sort(tests)].sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = LongestFirst;
