/**
 * Runs the Python client's tests (clients/python/tests, pytest from the project's .venv)
 * against the same real stack as `npm test`: embedded PostgreSQL (migrated), the Temporal dev
 * server, the local OpenAI-compatible server (summaries take 300 ms, so appends land during
 * compactions), the strict fake of the OpenAI Responses API (a scripted agent's tool calls, at
 * STRICT_RESPONSES_URL; a run where it refused any request fails) and a worker, after writing
 * the Python client's BPE rank files (scripts/python-token-ranks.ts). Exits with pytest's exit
 * code (1 when pytest passed but the strict fake refused a request); counts go to
 * .test-run/pytest.xml (JUnit) for .ci/run's closing line.
 *
 *   npm run test:python [-- pytest args]
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { loadConfig, PROJECT_ROOT } from '../src/config';
import { type DatabaseHandle, openDatabase, runMigrations } from '../src/db/database';
import { startEmbeddedPostgres } from '../src/dev/postgres';
import { findTemporalCli } from '../src/dev/temporal-cli';
import { freePort, startLocalTemporal } from '../src/dev/temporal-server';
import { createSessionWorker, installRuntime } from '../src/worker';
import { startFakeLlm } from '../test/support/fake-llm';
import { startStrictResponses } from '../test/support/strict-responses';
import { writeRankFiles } from './python-token-ranks';

/** The run's login roles (a fresh cluster each run), as DATABASE_URLs of the same database. */
async function createPythonLogins(admin: DatabaseHandle, url: string): Promise<{ worker: string; app: string }> {
  const as = (user: string) => Object.assign(new URL(url), { username: user, password: user }).toString();
  // Fixed names and passwords of this harness, not input: safe to inline.
  await admin.pool.query(`CREATE ROLE sc_py_worker LOGIN PASSWORD 'sc_py_worker' IN ROLE sc_worker`);
  await admin.pool.query(`CREATE ROLE sc_py_app LOGIN PASSWORD 'sc_py_app' IN ROLE sc_app, sc_reader`);
  return { worker: as('sc_py_worker'), app: as('sc_py_app') };
}

async function main(): Promise<number> {
  const python = path.join(PROJECT_ROOT, '.venv/bin/python');
  if (!existsSync(python)) {
    console.error('no .venv: create it with `python3 -m venv .venv && .venv/bin/pip install -e "clients/python[test,agents]"` (.ci/run does)');
    return 2;
  }
  // The Python client counts tokens with the same BPE ranks as gpt-tokenizer (git-ignored files).
  writeRankFiles(console.log);
  const runDir = path.join(PROJECT_ROOT, '.test-run', `python-${process.pid}`);
  mkdirSync(runDir, { recursive: true });
  const stops: Array<() => Promise<void>> = [];
  try {
    const pg = await startEmbeddedPostgres({ dataDir: path.join(runDir, 'postgres'), port: await freePort(), database: 'session_compaction' });
    stops.push(() => pg.stop());
    const server = await startLocalTemporal({ cliPath: findTemporalCli(), port: await freePort(), headless: true, log: console.warn });
    stops.push(() => server.stop());
    const llm = await startFakeLlm();
    llm.setDefault({ delayMs: 300 });
    stops.push(() => llm.close());
    const responses = await startStrictResponses({ seed: 38 });
    stops.push(() => responses.close());

    const env: Record<string, string> = {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TASK_QUEUE: 'python-tests',
      DATABASE_URL: pg.url,
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: llm.baseURL,
      STRICT_RESPONSES_URL: responses.url,
      COMPACTION_MODEL: 'fake-model',
      COMPACTION_TAIL_TOKENS: '200',
    };
    const config = loadConfig(env);
    installRuntime(config, 'WARN');
    // Migrated as the superuser (the deploy step); then every component under its own login
    // (docs/security.md, "Roles"): the worker in sc_worker, the Python client and the `sessions`
    // commands the tests run in sc_app and sc_reader. The tests' own ledger and admin
    // statements use ADMIN_DATABASE_URL.
    const admin = openDatabase(pg.url);
    await runMigrations(admin);
    const logins = await createPythonLogins(admin, pg.url);
    await admin.close();
    env.DATABASE_URL = logins.app;
    env.ADMIN_DATABASE_URL = pg.url;
    env.WORKER_DATABASE_URL = logins.worker;
    const workerConfig = { ...config, databaseUrl: logins.worker };
    const database = openDatabase(logins.worker);
    const worker = await createSessionWorker({ config: workerConfig, database, log: () => undefined });
    const running = worker.run();
    stops.push(async () => {
      worker.shutdown();
      await running;
      await database.close();
    });

    const junit = path.join(PROJECT_ROOT, '.test-run', 'pytest.xml');
    const args = ['-m', 'pytest', path.join(PROJECT_ROOT, 'clients/python/tests'), `--junitxml=${junit}`, '-q', ...process.argv.slice(2)];
    const child = spawn(python, args, { cwd: path.join(PROJECT_ROOT, 'clients/python'), env: { ...process.env, ...env }, stdio: 'inherit' });
    const code = await new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
    for (const refused of responses.rejections) console.error(`the strict Responses fake refused a request: ${JSON.stringify(refused).slice(0, 500)}`);
    return code === 0 && responses.rejections.length > 0 ? 1 : code;
  } finally {
    for (const stop of stops.reverse()) await stop().catch((error) => console.warn(`stopping: ${error}`));
    rmSync(runDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
