/**
 * The benchmark's traces of a process's round trips, with wall-clock start times so they line
 * up with the Temporal history's event times (one machine, one clock): every Postgres
 * statement or transaction the process sends (node-postgres), and every request to the LLM
 * (the `fetch` the OpenAI client uses). Benchmark-only: bench/session-worker.ts turns them on
 * in our worker, bench/run.ts in its own process for the client's statements.
 */
import { appendFileSync } from 'node:fs';
import { Client } from 'pg';

/** A transaction (begin .. commit) or a statement outside one: its round trips, time, start and first 80 chars of each statement. */
export interface SqlTraceEntry {
  statements: number;
  ms: number;
  /** Wall-clock start, ms since the epoch (sub-millisecond). */
  at: number;
  sql: string[];
}

/** One request to the LLM: its start, the time to the response's headers and to the end of its body. */
export interface LlmTraceEntry {
  at: number;
  headersMs: number;
  ms: number;
}

/** Wall-clock now in ms since the epoch, sub-millisecond (the history's event times are nanosecond). */
export const wallNow = () => performance.timeOrigin + performance.now();

/** Appends each entry to `file` as a JSON line. */
export const fileSink =
  (file: string) =>
  (entry: SqlTraceEntry | LlmTraceEntry): void =>
    appendFileSync(file, `${JSON.stringify(entry)}\n`);

/**
 * Hands every transaction (begin .. commit) and every statement outside one to `sink`. The
 * benchmark finds the compaction's statements among them without calling the store's code.
 * Returns a function that takes the trace off again.
 */
export function traceSql(sink: (entry: SqlTraceEntry) => void): () => void {
  const open = new WeakMap<object, { started: number; sql: string[] }>();
  // eslint-disable-next-line @typescript-eslint/unbound-method -- always called with .apply(this, args) below
  const original = Client.prototype.query as (...args: unknown[]) => unknown;
  const entry = (started: number, statements: number, sql: string[]): SqlTraceEntry => ({
    statements,
    ms: performance.now() - started,
    at: performance.timeOrigin + started,
    sql,
  });
  (Client.prototype as unknown as { query: unknown }).query = function (this: object, ...args: unknown[]) {
    const first = args[0] as string | { text?: string };
    const text = (typeof first === 'string' ? first : (first?.text ?? '')).trim();
    const started = performance.now();
    const callback = args[args.length - 1];
    if (typeof callback === 'function') {
      // pool.query's form: one statement outside any transaction.
      args[args.length - 1] = (...cbArgs: unknown[]) => {
        if (!open.get(this)) sink(entry(started, 1, [text.slice(0, 80)]));
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
        sink(entry(tx.started, tx.sql.length + 2, tx.sql));
      } else if (tx) tx.sql.push(text.slice(0, 80));
      else if (!/^begin/i.test(text)) sink(entry(started, 1, [text.slice(0, 80)]));
      return value;
    });
  };
  return () => void ((Client.prototype as unknown as { query: unknown }).query = original);
}

/**
 * Hands every request to a URL under `baseURL` to `sink`, timed to the end of its response
 * body (the summariser reads it whole or as a stream). The OpenAI client takes the global
 * `fetch` when it is built, so this must run before the summariser is created.
 */
export function traceLlm(baseURL: string, sink: (entry: LlmTraceEntry) => void): void {
  const original = globalThis.fetch;
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith(baseURL)) return original(input, init);
    const started = performance.now();
    const response = await original(input, init);
    const headersMs = performance.now() - started;
    const done = () => sink({ at: performance.timeOrigin + started, headersMs, ms: performance.now() - started });
    if (!response.body) {
      done();
      return response;
    }
    const body = response.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ flush: done }));
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
