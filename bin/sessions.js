#!/usr/bin/env node
// The `sessions` command. In a dev checkout (the TypeScript sources and tsx, a devDependency,
// are there) it runs the sources through tsx, so it never runs a stale build; otherwise (the
// image: dist/ and production dependencies only) the compiled CLI, dist/cli/main.js.
const { existsSync } = require('node:fs');
const path = require('node:path');

const sources = path.join(__dirname, '..', 'src', 'cli', 'main.ts');
const compiled = path.join(__dirname, '..', 'dist', 'cli', 'main.js');

function tsxInstalled() {
  try {
    require.resolve('tsx/cjs');
    return true;
  } catch {
    return false;
  }
}

let cli;
if (existsSync(sources) && (tsxInstalled() || !existsSync(compiled))) {
  require('tsx/cjs');
  cli = require(sources);
} else {
  cli = require(compiled);
}
cli.main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
