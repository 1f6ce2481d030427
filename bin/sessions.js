#!/usr/bin/env node
// The `sessions` command. Runs the TypeScript sources through tsx (a runtime dependency).
require('tsx/cjs');
require('../src/client/cli.ts')
  .main(process.argv.slice(2))
  .then((code) => {
    process.exitCode = code;
  });
