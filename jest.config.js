/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }],
    // canonicalize (RFC 8785, for the ledger) ships ES modules only: jest's CommonJS runtime needs it
    // transformed, and its package exports name only the `import` condition, so it is mapped to its file.
    '/node_modules/canonicalize/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!canonicalize/)'],
  moduleNameMapper: { '^canonicalize$': '<rootDir>/node_modules/canonicalize/lib/canonicalize.js' },
  globalSetup: '<rootDir>/test/setup/globalSetup.ts',
  globalTeardown: '<rootDir>/test/setup/globalTeardown.ts',
  // The suites share one database server; two workers match the two cores CI has.
  maxWorkers: 2,
  testTimeout: 120000,
};
