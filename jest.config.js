/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }],
    // canonicalize (RFC 8785, for the ledger) ships an ES module only, which jest's CommonJS runtime
    // cannot load untransformed (Node itself requires it; patches/canonicalize+4.0.0.patch lets it resolve).
    '/node_modules/canonicalize/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!canonicalize/)'],
  globalSetup: '<rootDir>/test/setup/globalSetup.ts',
  globalTeardown: '<rootDir>/test/setup/globalTeardown.ts',
  // The suites share one database server; two workers match the two cores CI has.
  maxWorkers: 2,
  testTimeout: 120000,
};
