/**
 * Per-test-file harness over the real stack started by global setup: a fresh database
 * cloned from the migrated template, a worker on its own task queue (in this process, or as
 * a separate worker process that a test may kill), a SessionsClient, and a fake LLM.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { sql } from 'drizzle-orm';
import { Pool } from 'pg';
import { afterAll, beforeAll, beforeEach, inject } from 'vitest';
import { SessionsClient, type SessionsClientOptions } from '../../src/client';
import { type Config, loadConfig } from '../../src/config';
import { openDatabase, type DatabaseHandle } from '../../src/db/database';
import { lineageWorkflowId } from '../../src/workflows/contract';
import type { LineageSettings } from '../../src/workflows/settings';
import { createSessionWorker, type SessionWorker, type SessionWorkerOptions } from '../../src/worker';
import { STACK_LOGINS } from '../setup/global-setup';
import { type FakeLlm, startFakeLlm } from './fake-llm';
import { spawnWorkerProcess, type WorkerProcess } from './worker-process';

export { conversation } from './conversation';

async function cloneTemplateDatabase(templateUrl: string, options: { empty?: boolean } = {}): Promise<string> {
  const name = `t_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = new URL(templateUrl);
  const templateName = admin.pathname.slice(1);
  admin.pathname = '/postgres';
  const pool = new Pool({ connectionString: admin.toString(), max: 1 });
  try {
    await pool.query(options.empty ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${templateName}`);
  } finally {
    await pool.end();
  }
  const url = new URL(templateUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The URL of the same database under one of the stack's logins (test/setup/global-setup.ts). */
function asLogin(databaseUrl: string, login: keyof typeof STACK_LOGINS): string {
  const url = new URL(databaseUrl);
  url.username = STACK_LOGINS[login].user;
  url.password = STACK_LOGINS[login].password;
  return url.toString();
}

export interface TestStackOptions {
  env?: Record<string, string>;
  settings?: Partial<LineageSettings>;
  /** Do not start an in-process worker (a test starts worker processes itself). */
  noWorker?: boolean;
  worker?: Partial<SessionWorkerOptions>;
  /** Start from an empty database (no migrations run) instead of a clone of the migrated template. */
  emptyDatabase?: boolean;
}

export interface TestStack {
  /** The superuser's: the tests' own reads and admin statements, the CLI. */
  config: Config;
  env: Record<string, string>;
  llm: FakeLlm;
  /** The superuser's connection: the tests' own ledger and admin reads. */
  db: DatabaseHandle;
  /** DATABASE_URL under the worker's login (in sc_worker), as every worker the stack starts gets it. */
  workerDatabaseUrl: string;
  /** DATABASE_URL under the application login (in sc_app alone): the clients' and the `sessions` command's for the data plane. */
  appDatabaseUrl: string;
  /** DATABASE_URL under the reader login (in sc_reader alone): the inspector's and the `sessions` command's for an operator's reads. */
  readerDatabaseUrl: string;
  /** The stack's client, under the application login (in sc_app alone): the data-plane functions only, the operator's reads included. */
  client: SessionsClient;
  /** A client under the reader login (in sc_reader alone), for the inspector: the read functions only. */
  reader: SessionsClient;
  /** The connection the stack's clients use (withClient too): the application login's. */
  clientDb: DatabaseHandle;
  temporal: Client;
  worker?: SessionWorker;
  startWorker(options?: Partial<SessionWorkerOptions>): Promise<SessionWorker>;
  stopWorker(): Promise<void>;
  /** A worker in a process of its own; `env` overrides the stack's environment for it. */
  spawnWorkerProcess(env?: Record<string, string>): Promise<WorkerProcess>;
  close(): Promise<void>;
}

export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const stack = inject('stack');
  const llm = await startFakeLlm();
  const databaseUrl = await cloneTemplateDatabase(stack.databaseUrl, { empty: options.emptyDatabase });
  const env: Record<string, string> = {
    TEMPORAL_ADDRESS: stack.temporalAddress,
    TEMPORAL_TASK_QUEUE: `test-${randomUUID()}`,
    DATABASE_URL: databaseUrl,
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: llm.baseURL,
    COMPACTION_MODEL: 'fake-model',
    COMPACTION_LEASE_TTL_MS: '3000',
    COMPACTION_TAIL_TOKENS: '200',
    ...options.env,
  };
  const config = loadConfig(env);
  const db = openDatabase(databaseUrl);
  // Workers run under the worker login: every stack test proves sc_worker's grants suffice.
  const workerDatabaseUrl = asLogin(databaseUrl, 'worker');
  let workerDb: DatabaseHandle | undefined;
  const connection = await Connection.connect({ address: stack.temporalAddress });
  const temporal = new Client({ connection, namespace: config.temporal.namespace });
  // The clients run under the application login: every stack test proves the data plane's grants suffice.
  const appDatabaseUrl = asLogin(databaseUrl, 'app');
  const readerDatabaseUrl = asLogin(databaseUrl, 'reader');
  const clientDb = openDatabase(appDatabaseUrl);
  const client = await SessionsClient.connect({
    config,
    database: clientDb,
    settings: { retryInitialIntervalMs: 200, retryMaximumIntervalMs: 1000, ...options.settings },
  });
  // The inspector runs under the reader login: every inspector test proves the read functions suffice.
  const readerDb = openDatabase(readerDatabaseUrl);
  const reader = await SessionsClient.connect({ config, database: readerDb, connection });
  let nativeConnection: NativeConnection | undefined;
  let running: { worker: SessionWorker; done: Promise<void> } | undefined;
  const children = new Set<ChildProcess>();

  const result: TestStack = {
    config,
    env,
    llm,
    db,
    workerDatabaseUrl,
    appDatabaseUrl,
    readerDatabaseUrl,
    client,
    reader,
    clientDb,
    temporal,
    async startWorker(workerOptions = {}) {
      nativeConnection ??= await NativeConnection.connect({ address: stack.temporalAddress });
      workerDb ??= openDatabase(workerDatabaseUrl);
      const worker = await createSessionWorker({
        config: { ...config, databaseUrl: workerDatabaseUrl },
        connection: nativeConnection,
        database: workerDb,
        workflowBundlePath: stack.workflowBundlePath,
        log: () => undefined,
        ...options.worker,
        ...workerOptions,
      });
      running = { worker, done: worker.run() };
      result.worker = worker;
      return worker;
    },
    async stopWorker() {
      if (!running) return;
      running.worker.shutdown();
      await running.done;
      running = undefined;
      result.worker = undefined;
    },
    async spawnWorkerProcess(overrides = {}) {
      const child = await spawnWorkerProcess({ ...env, DATABASE_URL: workerDatabaseUrl, ...overrides }, { workflowBundlePath: stack.workflowBundlePath });
      children.add(child);
      return child;
    },
    async close() {
      for (const child of children) child.kill('SIGKILL');
      await result.stopWorker();
      await client.close();
      await clientDb.close();
      await reader.close();
      await readerDb.close();
      await connection.close();
      await nativeConnection?.close();
      await workerDb?.close();
      await db.close();
      await llm.close();
    },
  };
  if (!options.noWorker) await result.startWorker();
  return result;
}

export const uniqueId = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

/**
 * One stack for a whole test file: started before its tests, closed after them, the fake
 * LLM reset before each test. Returns a getter, since the stack exists only once started.
 */
export function useTestStack(options: TestStackOptions = {}): () => TestStack {
  let stack: TestStack | undefined;
  beforeAll(async () => {
    stack = await startTestStack(options);
  });
  afterAll(async () => {
    await stack?.close();
  });
  beforeEach(() => stack?.llm.reset());
  return () => {
    if (!stack) throw new Error('the test stack is not started yet');
    return stack;
  };
}

/**
 * Runs `use` with a SessionsClient of its own on the stack (settings other than the stack
 * client's), and closes that client when `use` ends, however it ends.
 */
export async function withClient<T>(
  stack: TestStack,
  options: Omit<SessionsClientOptions, 'config' | 'database'>,
  use: (client: SessionsClient) => Promise<T>,
): Promise<T> {
  const client = await SessionsClient.connect({ config: stack.config, database: stack.clientDb, ...options });
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

/**
 * Polls the lineage's latest run until it is no longer running or `timeoutMs` has passed, and
 * returns its status (RUNNING when it outlived the wait).
 */
export async function latestRunStatus(stack: TestStack, lineageId: string, timeoutMs: number): Promise<string> {
  const handle = stack.temporal.workflow.getHandle(lineageWorkflowId(lineageId));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = (await handle.describe()).status.name;
    if (status !== 'RUNNING' || Date.now() > deadline) return status;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The compaction children of a session, straight from Postgres. */
export async function childrenOf(stack: TestStack, parentId: string): Promise<string[]> {
  const rows = await stack.db.db.execute(sql`select id from sessions where parent_session_id = ${parentId}`);
  return rows.rows.map((r) => String((r as { id: string }).id));
}
