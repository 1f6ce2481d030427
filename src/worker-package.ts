/**
 * `session-compaction/worker`: what a user needs to run the worker (`runWorker`, which the
 * `session-compaction worker` command calls) or to embed ours in a worker they already run
 * (`createSessionWorker`, or the workflows' path and prebuilt bundles with the config, database
 * and codec helpers). Needs the worker's optional peer dependencies (see docs/install.md).
 */
import { assertWorkerDependencies } from './worker-dependencies';

// Before ./worker loads them: a missing package is named with the install line.
assertWorkerDependencies();

export { createSessionWorker, installRuntime, runWorker, PREBUILT_WORKFLOW_BUNDLES, type SessionWorker, type SessionWorkerOptions } from './worker';
export { loadConfig, type Config } from './config';
export { checkSchemaLevel, openDatabase, runMigrations, SchemaBehindError, type DatabaseHandle } from './db/database';
export { encryptedDataConverter } from './codec/aes-gcm-codec';
export { WorkerDependenciesMissingError, WORKER_PEER_DEPENDENCIES } from './worker-dependencies';
