/**
 * A throwaway local stack for scripts outside the test runner (the benchmark, the replay
 * recorder): embedded Postgres (migrated, as `npm run db:migrate` does before a worker starts)
 * and an in-memory Temporal dev server in a temporary folder, the local OpenAI-compatible
 * server, and the environment that points the service at them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Config, loadConfig } from '../../src/config';
import { openDatabase, runMigrations } from '../../src/db/database';
import { startEmbeddedPostgres } from '../../src/dev/postgres';
import { findTemporalCli } from '../../src/dev/temporal-cli';
import { freePort, startLocalTemporal } from '../../src/dev/temporal-server';
import { type FakeLlm, startFakeLlm } from './fake-llm';

export interface ScratchStackOptions {
  /** Environment on top of the stack's own (wins over it). */
  env?: Record<string, string>;
  /** More `temporal server start-dev` arguments (the benchmark: dynamic config). */
  temporalArgs?: string[];
  /** Serve the dev server's Prometheus metrics on a free port (`temporal.metricsUrl`). */
  metrics?: boolean;
}

export interface ScratchTemporal {
  address: string;
  /** The dev server's Prometheus endpoint, when started with `metrics`. */
  metricsUrl?: string;
  stop(): Promise<void>;
}

export interface ScratchStack {
  /** A temporary folder, removed by stop(). */
  dir: string;
  env: Record<string, string>;
  config: Config;
  llm: FakeLlm;
  temporal: ScratchTemporal;
  stop(): Promise<void>;
}

export async function startScratchStack(name: string, options: ScratchStackOptions = {}): Promise<ScratchStack> {
  const cliPath = findTemporalCli();
  const extraArgs = [...(options.temporalArgs ?? [])];
  const metricsPort = options.metrics ? await freePort() : undefined;
  if (metricsPort !== undefined) extraArgs.unshift('--metrics-port', String(metricsPort));
  // The SDK's download (the fallback without a CLI) takes no extra arguments: fail rather than drop them.
  if (!cliPath && extraArgs.length > 0)
    throw new Error(`${name}: dev server arguments (${extraArgs.join(' ')}) need the Temporal CLI: run npm run temporal:install`);
  const dir = mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort(), database: name.replace(/\W/g, '_') });
  const migrator = openDatabase(pg.url, { max: 1 });
  try {
    await runMigrations(migrator);
  } finally {
    await migrator.close();
  }
  const server = await startLocalTemporal({ cliPath, port: await freePort(), headless: true, extraArgs, log: console.warn });
  const temporal: ScratchTemporal = {
    address: server.address,
    ...(metricsPort !== undefined ? { metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` } : {}),
    stop: () => server.stop(),
  };
  const llm = await startFakeLlm();
  const env: Record<string, string> = {
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: name,
    DATABASE_URL: pg.url,
    OPENAI_API_KEY: name,
    OPENAI_BASE_URL: llm.baseURL,
    COMPACTION_MODEL: 'fake-model',
    COMPACTION_TAIL_TOKENS: '200',
    ...options.env,
  };
  return {
    dir,
    env,
    config: loadConfig(env),
    llm,
    temporal,
    async stop() {
      await llm.close();
      await temporal.stop();
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
