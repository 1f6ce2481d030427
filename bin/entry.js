// The one table of the paths the bins run, relative to the package root: the TypeScript source
// (a dev checkout, run through tsx) and the compiled file (an install or the image, plain node).
// Re-pointing a command is one line here.
const { existsSync } = require('node:fs');
const path = require('node:path');

const ENTRIES = {
  sessions: 'cli/main',
  worker: 'worker-package',
  migrate: 'db/migrate-cli',
};

const root = path.join(__dirname, '..');

function tsxInstalled() {
  try {
    require.resolve('tsx/cjs');
    return true;
  } catch {
    return false;
  }
}

/** Loads a command's module: the sources through tsx in a dev checkout, dist/ otherwise. */
function load(name) {
  const sources = path.join(root, 'src', `${ENTRIES[name]}.ts`);
  const compiled = path.join(root, 'dist', `${ENTRIES[name]}.js`);
  if (existsSync(sources) && (tsxInstalled() || !existsSync(compiled))) {
    require('tsx/cjs');
    return require(sources);
  }
  return require(compiled);
}

module.exports = { load };
