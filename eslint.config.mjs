// ESLint (flat config) with typescript-eslint's type-aware rules, run by `npm test`.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // test/client/consumer is another project's program: the package test type-checks it against the packed package.
  { ignores: ['**/dist/', 'node_modules/', 'test-artifacts/', '.cache/', 'data/', 'coverage/', 'test/client/consumer/'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      // Two programs: the server (and its tests and scripts) and the dashboard, which has a DOM of its own.
      parserOptions: { project: ['./tsconfig.json', './src/dashboard/tsconfig.json'], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Numbers and booleans in messages read naturally; objects in templates would not.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-import-type-side-effects': 'error',
      // `onClick={() => setOpen(false)}` is how React handlers are written.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // `_` marks what a destructuring or loop must name but does not use.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // A response body in a test is parsed JSON of whatever the server sent, typed `any` by the `call`
    // helper on purpose: `expect(...)` is its type check. Every other rule applies to tests as to src.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
    },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: globals.node },
  },
);
