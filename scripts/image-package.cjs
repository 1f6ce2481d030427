// The image's package.json (Dockerfile, final stage): the package's own dependencies and the
// worker's optional peer dependencies, at the versions the repository pins and locks, as
// dependencies, so `npm install --omit=dev` against the repository's package-lock.json installs
// the worker and nothing of the dev tooling. Run from the image's /app, after dist/ is copied.
const { writeFileSync } = require('node:fs');
const path = require('node:path');

const root = process.cwd();
const pkg = require(path.join(root, 'package.json'));
const { WORKER_PEER_DEPENDENCIES } = require(path.join(root, 'dist/worker-dependencies.js'));
const peers = Object.fromEntries(WORKER_PEER_DEPENDENCIES.map((name) => [name, pkg.devDependencies[name]]));
const image = { ...pkg, dependencies: { ...pkg.dependencies, ...peers }, devDependencies: {}, peerDependencies: {}, peerDependenciesMeta: {} };
writeFileSync(path.join(root, 'package.json'), `${JSON.stringify(image, null, 2)}\n`);
