/**
 * Two projects: `unit`, the pure code (no database, no server: `npm run test:unit`, seconds), and
 * `integration`, everything over a real HTTP server and database (globalSetup provides the database).
 * `npm test` runs both.
 * @type {import('jest').Config}
 */
const shared = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }],
    // canonicalize (RFC 8785, for the ledger) and jose (viewer tokens) ship ES modules only, which jest's
    // CommonJS runtime cannot load untransformed (Node itself requires them; patches/canonicalize+4.0.0.patch
    // lets canonicalize resolve).
    '/node_modules/(canonicalize|jose)/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(canonicalize|jose)/)'],
};

module.exports = {
  projects: [
    { ...shared, displayName: 'unit', roots: ['<rootDir>/test/unit'], testMatch: ['**/*.test.ts'] },
    {
      ...shared,
      displayName: 'integration',
      roots: ['<rootDir>/test'],
      testMatch: ['**/*.test.ts'],
      testPathIgnorePatterns: ['/test/unit/'],
      globalSetup: '<rootDir>/test/setup/globalSetup.ts',
      globalTeardown: '<rootDir>/test/setup/globalTeardown.ts',
    },
  ],
  // The suites share one database server; two workers match the two cores CI has.
  maxWorkers: 2,
  testSequencer: '<rootDir>/test/setup/sequencer.js',
  testTimeout: 120000,
};
