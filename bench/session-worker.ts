/**
 * Our worker for the benchmark: src/worker.ts's createSessionWorker, with extra Worker options
 * from BENCH_WORKER_OPTIONS (JSON, e.g. {"reuseV8Context":false}) so the benchmark can compare
 * them, and BENCH_COMMIT_PATH=optimistic to turn the adaptive commit path off. Benchmark-only; the shipped worker is src/worker.ts.
 */
import { appendFileSync } from 'node:fs';
import { Client } from 'pg';
import { loadConfig } from '../src/config';
import { commitPaths } from '../src/db/commit';
import { createSessionWorker, installRuntime } from '../src/worker';

/**
 * With BENCH_SQL_TRACE_FILE set, every transaction (begin .. commit) and every statement outside
 * one is written to that file as a JSON line: { statements, ms, sql: [first 80 chars of each] }.
 * The benchmark finds the compaction's commit among them without calling the store's code.
 */
function traceSql(file: string): void {
  const open = new WeakMap<object, { started: number; sql: string[] }>();
  // eslint-disable-next-line @typescript-eslint/unbound-method -- always called with .apply(this, args) below
  const original = Client.prototype.query as (...args: unknown[]) => unknown;
  (Client.prototype as unknown as { query: unknown }).query = function (this: object, ...args: unknown[]) {
    const first = args[0] as string | { text?: string };
    const text = (typeof first === 'string' ? first : (first?.text ?? '')).trim();
    const started = performance.now();
    const callback = args[args.length - 1];
    if (typeof callback === 'function') {
      // pool.query's form: one statement outside any transaction.
      args[args.length - 1] = (...cbArgs: unknown[]) => {
        if (!open.get(this)) appendFileSync(file, `${JSON.stringify({ statements: 1, ms: performance.now() - started, sql: [text.slice(0, 80)] })}\n`);
        return (callback as (...a: unknown[]) => unknown)(...cbArgs);
      };
      return original.apply(this, args);
    }
    const result = original.apply(this, args);
    if (!result || typeof (result as Promise<unknown>).then !== 'function') return result;
    if (/^begin/i.test(text)) open.set(this, { started, sql: [] });
    return (result as Promise<unknown>).then((value) => {
      const tx = open.get(this);
      if (tx && /^(commit|rollback)/i.test(text)) {
        open.delete(this);
        appendFileSync(file, `${JSON.stringify({ statements: tx.sql.length + 2, ms: performance.now() - tx.started, sql: tx.sql })}\n`);
      } else if (tx) tx.sql.push(text.slice(0, 80));
      else if (!/^begin/i.test(text)) appendFileSync(file, `${JSON.stringify({ statements: 1, ms: performance.now() - started, sql: [text.slice(0, 80)] })}\n`);
      return value;
    });
  };
}

async function main(): Promise<void> {
  if (process.env.BENCH_SQL_TRACE_FILE) traceSql(process.env.BENCH_SQL_TRACE_FILE);
  // BENCH_COMMIT_PATH=optimistic: every commit tries the optimistic path first (the adaptive path's "before").
  if (process.env.BENCH_COMMIT_PATH === 'optimistic') commitPaths.adaptive = false;
  const config = loadConfig();
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
