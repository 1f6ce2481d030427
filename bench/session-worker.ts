/**
 * Our worker for the benchmark: src/worker.ts's createSessionWorker, with extra Worker options
 * from BENCH_WORKER_OPTIONS (JSON, e.g. {"reuseV8Context":false}) so the benchmark can compare
 * them, BENCH_COMMIT_PATH=optimistic to turn the adaptive commit path off, and the traces of
 * bench/trace.ts (BENCH_SQL_TRACE_FILE, BENCH_LLM_TRACE_FILE). Benchmark-only; the shipped worker is src/worker.ts.
 */
import { loadConfig } from '../src/config';
import { commitPaths } from '../src/db/commit';
import { createSessionWorker, installRuntime } from '../src/worker';
import { fileSink, traceLlm, traceSql } from './trace';

async function main(): Promise<void> {
  // With BENCH_SQL_TRACE_FILE set, every transaction and every statement outside one is written
  // to that file as a JSON line (bench/trace.ts); with BENCH_LLM_TRACE_FILE, every request to the LLM.
  if (process.env.BENCH_SQL_TRACE_FILE) traceSql(fileSink(process.env.BENCH_SQL_TRACE_FILE));
  // BENCH_COMMIT_PATH=optimistic: every commit tries the optimistic path first (the adaptive path's "before").
  if (process.env.BENCH_COMMIT_PATH === 'optimistic') commitPaths.adaptive = false;
  const config = loadConfig();
  if (process.env.BENCH_LLM_TRACE_FILE && config.llm.baseURL) traceLlm(config.llm.baseURL, fileSink(process.env.BENCH_LLM_TRACE_FILE));
  installRuntime(config, 'ERROR');
  const workerOptions = process.env.BENCH_WORKER_OPTIONS ? JSON.parse(process.env.BENCH_WORKER_OPTIONS) : {};
  const sessionWorker = await createSessionWorker({ config, workerOptions, log: () => undefined });
  console.log(`worker ready ${JSON.stringify(workerOptions)}`);
  await sessionWorker.run();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
