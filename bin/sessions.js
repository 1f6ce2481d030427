#!/usr/bin/env node
const { load } = require('./entry');
// The `sessions` command (bin/entry.js says which module it runs).
load('sessions')
  .main(process.argv.slice(2))
  .then((code) => {
    process.exitCode = code;
  });
