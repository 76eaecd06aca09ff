#!/usr/bin/env node
// `npx audit-ledger …`: the command line (src/cli/main.ts), compiled on the fly by tsx like the service itself.
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS launcher: what `bin` runs */
require('tsx/cjs/api').register();
require('../src/cli/main.ts');
