#!/usr/bin/env node
const { load } = require('./entry');
// `session-compaction worker`: the worker (checks the database's migration level, then polls
// until SIGINT or SIGTERM), configured by the environment as `npm run worker` is.
// `session-compaction migrate`: the migrations, the deploy step before workers start.
const USAGE =
  'usage: session-compaction <worker|migrate>\n  worker   run the compaction worker (TEMPORAL_ADDRESS, DATABASE_URL, ... as documented)\n  migrate  apply the SQL migrations to DATABASE_URL';
const [command] = process.argv.slice(2);
if (command === 'worker') {
  load('worker')
    .runWorker()
    .catch((error) => {
      console.error(error);
      process.exit(1);
    });
} else if (command === 'migrate') {
  load('migrate');
} else if (command === undefined || command === '--help' || command === '-h') {
  console.log(USAGE);
} else {
  console.error(`unknown command ${command}\n${USAGE}`);
  process.exitCode = 2;
}
