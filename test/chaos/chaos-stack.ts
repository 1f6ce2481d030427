/**
 * A private stack for fault injection: its own Postgres (restartable), its own file-backed
 * Temporal dev server (killable and restartable on the same port and file), the local
 * OpenAI-compatible server, and worker processes that can be SIGKILLed. Nothing here is
 * shared with other tests, so a scenario can break it freely.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { SessionsClient } from '../../src/client';
import { type Config, loadConfig } from '../../src/config';
import { type DatabaseHandle, openDatabase, runMigrations } from '../../src/db/database';
import { audit, type AuditReport } from '../../src/db/session-store';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/dev/postgres';
import { findTemporalCli } from '../../src/dev/temporal-cli';
import { type DevServer, freePort, startDevServer } from '../../src/dev/temporal-server';
import { type FakeLlm, startFakeLlm } from '../support/fake-llm';
import { spawnWorkerProcess } from '../support/worker-process';

export interface ChaosStack {
  config: Config;
  env: Record<string, string>;
  llm: FakeLlm;
  db: DatabaseHandle;
  client: SessionsClient;
  pg: EmbeddedPostgres;
  workers: Set<ChildProcess>;
  /** A worker process; `env` overrides the stack's environment for it (another task queue, no LLM). */
  startWorker(env?: Record<string, string>): Promise<ChildProcess>;
  killWorker(worker: ChildProcess): Promise<void>;
  /** SIGKILLs the Temporal dev server; resolves with the signal it died of. */
  killTemporal(): Promise<string | undefined>;
  restartTemporal(): Promise<void>;
  audit(): Promise<AuditReport>;
  close(): Promise<void>;
}

export async function startChaosStack(name: string, env: Record<string, string> = {}): Promise<ChaosStack> {
  const { runDir, workflowBundlePath } = inject('stack');
  const dir = path.join(runDir, `chaos-${name}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort(), database: 'chaos' });
  const cliPath = findTemporalCli();
  if (!cliPath) throw new Error('chaos scenarios need the Temporal CLI');
  const temporalPort = await freePort();
  const serverOptions = { cliPath, port: temporalPort, headless: true, dbFilename: path.join(dir, 'temporal.sqlite') };
  let server: DevServer | undefined = await startDevServer(serverOptions);
  const llm = await startFakeLlm();
  const fullEnv: Record<string, string> = {
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_TASK_QUEUE: `chaos-${name}`,
    DATABASE_URL: pg.url,
    OPENAI_API_KEY: 'chaos',
    OPENAI_BASE_URL: llm.baseURL,
    COMPACTION_MODEL: 'fake-model',
    // No lease under 3 s: a loaded 2-core machine must not expire a healthy one.
    COMPACTION_LEASE_TTL_MS: '3000',
    COMPACTION_TAIL_TOKENS: '200',
    WORKER_SHUTDOWN_GRACE_MS: '2000',
    ...env,
  };
  const config = loadConfig(fullEnv);
  const db = openDatabase(pg.url);
  await runMigrations(db);
  const client = await SessionsClient.connect({
    config,
    database: db,
    settings: { retryInitialIntervalMs: 200, retryMaximumIntervalMs: 1000, maxAttempts: 20 },
  });
  const workers = new Set<ChildProcess>();

  const stack: ChaosStack = {
    config,
    env: fullEnv,
    llm,
    db,
    client,
    pg,
    workers,
    async startWorker(env = {}) {
      const worker = await spawnWorkerProcess({ ...fullEnv, ...env }, { workflowBundlePath, echo: Boolean(process.env.CHAOS_ECHO) });
      worker.once('exit', (code, signal) => process.env.CHAOS_ECHO && console.log('chaos: worker exited', code, signal));
      workers.add(worker);
      worker.once('exit', () => workers.delete(worker));
      return worker;
    },
    async killWorker(worker) {
      if (worker.exitCode !== null || worker.signalCode !== null) return;
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.kill('SIGKILL');
      await exited;
    },
    async killTemporal() {
      if (!server) return undefined;
      const exited = new Promise<string | undefined>((resolve) => server!.process.once('exit', (_code, signal) => resolve(signal ?? undefined)));
      server.process.kill('SIGKILL');
      const signal = await exited;
      server = undefined;
      return signal;
    },
    async restartTemporal() {
      server = await startDevServer(serverOptions);
    },
    audit: () => audit(db.db),
    async close() {
      await Promise.all([...workers].map((w) => stack.killWorker(w)));
      await client.close();
      await db.close();
      await llm.close();
      await server?.stop();
      await pg.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return stack;
}
