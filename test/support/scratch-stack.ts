/**
 * A throwaway local stack for scripts outside the test runner (the benchmark, the replay
 * recorder): embedded Postgres and an in-memory Temporal dev server in a temporary folder,
 * the local OpenAI-compatible server, and the environment that points the service at them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Config, loadConfig } from '../../src/config';
import { startEmbeddedPostgres } from '../../src/dev/postgres';
import { findTemporalCli } from '../../src/dev/temporal-cli';
import { freePort, startLocalTemporal } from '../../src/dev/temporal-server';
import { type FakeLlm, startFakeLlm } from './fake-llm';

export interface ScratchStack {
  /** A temporary folder, removed by stop(). */
  dir: string;
  env: Record<string, string>;
  config: Config;
  llm: FakeLlm;
  stop(): Promise<void>;
}

export async function startScratchStack(name: string, env: Record<string, string> = {}): Promise<ScratchStack> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort(), database: name.replace(/\W/g, '_') });
  const server = await startLocalTemporal({ cliPath: findTemporalCli(), port: await freePort(), headless: true, log: console.warn });
  const llm = await startFakeLlm();
  const fullEnv: Record<string, string> = {
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_TASK_QUEUE: name,
    DATABASE_URL: pg.url,
    OPENAI_API_KEY: name,
    OPENAI_BASE_URL: llm.baseURL,
    COMPACTION_MODEL: 'fake-model',
    COMPACTION_TAIL_TOKENS: '200',
    ...env,
  };
  return {
    dir,
    env: fullEnv,
    config: loadConfig(fullEnv),
    llm,
    async stop() {
      await llm.close();
      await server.stop();
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
