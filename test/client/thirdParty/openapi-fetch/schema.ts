/**
 * Stands in, in the repository only, for the `schema.ts` that openapi-typescript generates from
 * openapi.json at test time beside a copy of program.ts (test/client/thirdPartyGenerators.test.ts): the
 * client package's copy of that same output (test/operations/openapi.test.ts keeps it identical), so
 * that the repository's tsc and eslint check program.ts too. The program itself never uses the package.
 */
export type { components, paths } from '../../../../packages/client/src/openapi';
