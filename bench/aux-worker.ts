/**
 * The benchmark's auxiliary worker process: the floor workflows and the naive design, on task
 * queue BENCH_AUX_QUEUE, laid out like ours (its own process, its own Postgres pool).
 */
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { Pool } from 'pg';
import { createLlmSummariser } from '../src/activities/summariser';
import { loadConfig } from '../src/config';
import { createNaiveActivities, FLOOR_TABLE_SQL } from './naive-activities';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const config = loadConfig();
  const pool = new Pool({ connectionString: config.databaseUrl, max: 10 });
  pool.on('error', () => undefined);
  await pool.query(FLOOR_TABLE_SQL);
  const quiet = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never;
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: config.temporal.address }),
    taskQueue: process.env.BENCH_AUX_QUEUE ?? 'bench-aux',
    workflowBundle: { code: (await bundleWorkflowCode({ workflowsPath: path.join(__dirname, 'workflows.ts'), logger: quiet })).code },
    activities: createNaiveActivities(createLlmSummariser(config.llm, { stallTimeoutMs: 60_000, requestTimeoutMs: 60_000 }), pool),
    ...config.worker,
    shutdownGraceTime: 1000,
    ...(process.env.BENCH_WORKER_OPTIONS ? JSON.parse(process.env.BENCH_WORKER_OPTIONS) : {}),
  });
  console.log('aux worker ready');
  await worker.run();
  await pool.end();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
