/**
 * `npm run dev` stops cleanly however it is stopped. Each test runs scripts/dev.ts as a child
 * process with a data dir and ports of its own, a compaction in flight against a local
 * OpenAI-compatible server that answers only when the test says so, stops it one way
 * (Ctrl-C, SIGTERM, Ctrl-C twice, SIGKILL), checks that no process of the stack is left and
 * its ports are free, then starts it again and checks what became of the compaction.
 *
 * The script runs as `node --import tsx scripts/dev.ts`, what `tsx scripts/dev.ts` runs
 * minus tsx's wrapper process, so that a signal or a SIGKILL reaches the dev process itself.
 * It leads a process group of its own, as a job started from a shell does; a terminal's
 * Ctrl-C is SIGINT to that whole group, which is how the Ctrl-C tests send it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { SessionsClient } from '../../src/client';
import { PROJECT_ROOT, loadConfig } from '../../src/config';
import { freePort } from '../../src/dev/temporal-server';
import { conversation } from '../support/conversation';
import { type ChatCompletionsServer, sendCompletion, serveChatCompletions } from '../support/openai-server';

const READY_TIMEOUT_MS = 180_000;
/** How long an orderly stop may take (the drain, Temporal's and Postgres' own shutdowns). */
const STOP_TIMEOUT_MS = 60_000;
/** How long Temporal and Postgres may take to go once the dev process is SIGKILLed (tether grace: 10 s). */
const ORPHAN_TIMEOUT_MS = 30_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, timeoutMs: number, probe: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

/** An OpenAI-compatible summariser that holds every answer until release(); a request whose caller gives up is dropped. */
interface GatedLlm {
  baseURL: string;
  requests(): number;
  release(): void;
  close(): Promise<void>;
}

async function startGatedLlm(): Promise<GatedLlm> {
  let requests = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const server: ChatCompletionsServer = await serveChatCompletions(async (raw, _req, res) => {
    requests++;
    const body = JSON.parse(raw) as { model: string; messages: Array<{ content: string }> };
    await Promise.race([released, new Promise((resolve) => res.once('close', resolve))]);
    if (res.destroyed) return;
    const text = `Goal: continue the work.\nCompleted actions: summarised ${body.messages.at(-1)?.content.length ?? 0} characters.`;
    sendCompletion(res, { id: 'cmpl-dev-shutdown', model: body.model, message: { role: 'assistant', content: text }, finishReason: 'stop' });
  });
  return { baseURL: server.baseURL, requests: () => requests, release, close: () => server.close() };
}

interface Ports {
  postgres: number;
  temporal: number;
  ui: number;
  inspector: number;
  metrics: number;
}

async function distinctFreePorts(): Promise<Ports> {
  const ports = new Set<number>();
  while (ports.size < 5) ports.add(await freePort());
  const [postgres, temporal, ui, inspector, metrics] = [...ports];
  return { postgres, temporal, ui, inspector, metrics };
}

/** One dev stack's settings: its data dir, ports and summariser. */
interface Stack {
  dataDir: string;
  ports: Ports;
  llm: GatedLlm;
  env: Record<string, string>;
}

async function newStack(extraEnv: Record<string, string> = {}): Promise<Stack> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dev-shutdown-'));
  const ports = await distinctFreePorts();
  const llm = await startGatedLlm();
  const env = {
    DEV_DATA_DIR: dataDir,
    DEV_POSTGRES_PORT: String(ports.postgres),
    DEV_TEMPORAL_PORT: String(ports.temporal),
    DEV_TEMPORAL_UI_PORT: String(ports.ui),
    INSPECTOR_BIND_ADDRESS: `127.0.0.1:${ports.inspector}`,
    METRICS_BIND_ADDRESS: `127.0.0.1:${ports.metrics}`,
    // The bundle global setup built from the same sources: no bundling at each start.
    WORKFLOW_BUNDLE_PATH: inject('stack').workflowBundlePath,
    OPENAI_API_KEY: 'dev-shutdown-test',
    OPENAI_BASE_URL: llm.baseURL,
    COMPACTION_MODEL: 'fake-model',
    COMPACTION_STREAM: 'false',
    // An abandoned attempt is retried 5 s after its last heartbeat.
    COMPACTION_LEASE_TTL_MS: '5000',
    COMPACTION_TAIL_TOKENS: '200',
    ...extraEnv,
  };
  return { dataDir, ports, llm, env };
}

interface DevRun {
  child: ChildProcess;
  output(): string;
  /** Resolves once the process has exited and its output is read. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitFor(text: string, timeoutMs: number): Promise<void>;
  /** SIGINT to its process group: what a terminal's Ctrl-C sends. */
  ctrlC(): void;
}

const runs = new Set<DevRun>();

function startDev(stack: Stack): DevRun {
  const env: NodeJS.ProcessEnv = { ...process.env, ...stack.env };
  // Nothing from the environment of the test run may point the stack elsewhere.
  for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_UI_URL', 'PAYLOAD_ENCRYPTION_KEYS', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'NODE_OPTIONS'])
    delete env[name];
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'scripts/dev.ts')], {
    cwd: PROJECT_ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => void (output += chunk.toString());
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  const run: DevRun = {
    child,
    output: () => output,
    exited,
    async waitFor(text, timeoutMs) {
      await until(`"${text}" in the dev output`, timeoutMs, () => {
        if (output.includes(text)) return true;
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`the dev process exited (${child.exitCode ?? child.signalCode}) before printing "${text}":\n${output}`);
        return undefined;
      });
    },
    ctrlC() {
      try {
        process.kill(-child.pid!, 'SIGINT');
      } catch {
        // The group is gone already.
      }
    },
  };
  runs.add(run);
  void exited.then(() => runs.delete(run));
  return run;
}

/** Milliseconds each start took to its ready line, for the log. */
const readyMs: number[] = [];

async function startReady(stack: Stack): Promise<DevRun> {
  const began = Date.now();
  const run = startDev(stack);
  await run.waitFor('session-compaction is ready', READY_TIMEOUT_MS);
  readyMs.push(Date.now() - began);
  return run;
}

async function exitOf(run: DevRun, timeoutMs = STOP_TIMEOUT_MS) {
  const timeout = sleep(timeoutMs).then(() => {
    throw new Error(`the dev process did not exit within ${timeoutMs} ms:\n${run.output()}`);
  });
  return Promise.race([run.exited, timeout]);
}

/** Every live process of a stack: its data dir is on its command line or in its environment (DEV_DATA_DIR). */
function processesOf(stack: Stack): Array<{ pid: number; command: string }> {
  const found: Array<{ pid: number; command: string }> = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      // Field 3 of stat, after the parenthesised command name: Z is a zombie, already dead.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      let environ = '';
      try {
        environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
      } catch {
        // Another user's process, when not run as root: its command line still names the data dir.
      }
      if (command.includes(stack.dataDir) || environ.split('\0').includes(`DEV_DATA_DIR=${stack.dataDir}`)) found.push({ pid, command: command.slice(0, 200) });
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function busyPorts(stack: Stack): Promise<string[]> {
  const busy: string[] = [];
  for (const [name, port] of Object.entries(stack.ports)) if (!(await isPortFree(port))) busy.push(`${name} ${port}`);
  return busy;
}

/**
 * Nothing of the stack is left: no process, no port held. The stack's own children are
 * gone before the dev process exits (it waits for them); the short wait is for tsx's
 * esbuild helper, which leaves when it sees its parent's pipe close.
 */
async function expectNothingLeft(stack: Stack): Promise<void> {
  await until('no process of the stack', 5_000, () => (processesOf(stack).length === 0 ? true : undefined)).catch(() => undefined);
  expect.soft(processesOf(stack), 'processes of the stack left running').toEqual([]);
  expect.soft(await busyPorts(stack), 'ports of the stack still taken').toEqual([]);
}

function clientOf(stack: Stack): Promise<SessionsClient> {
  const config = loadConfig({
    ...stack.env,
    TEMPORAL_ADDRESS: `127.0.0.1:${stack.ports.temporal}`,
    DATABASE_URL: `postgres://postgres:postgres@127.0.0.1:${stack.ports.postgres}/session_compaction`,
  });
  return SessionsClient.connect({ config, settings: { retryInitialIntervalMs: 200, retryMaximumIntervalMs: 1000 } });
}

/** Creates a session with a transcript to compact and requests its compaction; returns once the summariser has the request. */
async function compactionInFlight(stack: Stack, sessionId: string): Promise<string> {
  const client = await clientOf(stack);
  try {
    await client.createSession({ sessionId });
    await client.append(sessionId, conversation(12));
    const requestId = await client.requestCompaction(sessionId);
    await until('the summariser request', 60_000, () => (stack.llm.requests() >= 1 ? true : undefined));
    return requestId;
  } finally {
    await client.close();
  }
}

/** The dev logins connected to the dev database now, and what they are members of. */
async function devLogins(stack: Stack) {
  const pool = new Pool({ connectionString: `postgres://postgres:postgres@127.0.0.1:${stack.ports.postgres}/session_compaction`, max: 1 });
  try {
    const { rows } = await pool.query(
      `SELECT DISTINCT a.usename, pg_has_role(a.usename, 'sc_worker', 'MEMBER') AS worker, pg_has_role(a.usename, 'sc_migrator', 'MEMBER') AS migrator, r.rolsuper AS superuser
         FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename
        WHERE a.datname = 'session_compaction' AND a.usename <> 'postgres' AND pg_has_role(a.usename, 'sc_worker', 'MEMBER')`,
    );
    return rows;
  } finally {
    await pool.end();
  }
}

/** The compaction's answer after a restart, and its audit rows in Postgres. */
async function outcomeOf(stack: Stack, sessionId: string, requestId: string) {
  const client = await clientOf(stack);
  try {
    const result = await client.waitForResult(sessionId, requestId, { timeoutMs: 120_000 });
    const pool = new Pool({ connectionString: `postgres://postgres:postgres@127.0.0.1:${stack.ports.postgres}/session_compaction`, max: 1 });
    try {
      const { rows } = await pool.query<{ outcome: string; attempts: number }>(
        'SELECT outcome, attempts FROM compactions WHERE lineage_id = $1 AND request_ids ? $2',
        [sessionId, requestId],
      );
      return { result, rows };
    } finally {
      await pool.end();
    }
  } finally {
    await client.close();
  }
}

/** The dev output's stop lines, in order; each with the milliseconds it took. */
function stopLines(output: string): Array<{ step: string; ms: number }> {
  return [...output.matchAll(/^\[dev\] (worker drained|inspector stopped|Temporal dev server stopped|Postgres stopped) \((\d+) ms\)$/gm)].map((m) => ({
    step: m[1],
    ms: Number(m[2]),
  }));
}

const ORDERED_STOP = ['worker drained', 'inspector stopped', 'Temporal dev server stopped', 'Postgres stopped'];

async function stopCleanly(run: DevRun): Promise<void> {
  run.child.kill('SIGTERM');
  expect((await exitOf(run)).code).toBe(0);
}

const stacks = new Set<Stack>();
async function useStack(extraEnv: Record<string, string> = {}): Promise<Stack> {
  const stack = await newStack(extraEnv);
  stacks.add(stack);
  return stack;
}

afterEach(async () => {
  // Whatever a failed test left: its dev processes, then anything else of its stacks.
  for (const run of runs) {
    try {
      process.kill(-run.child.pid!, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
  for (const stack of stacks) {
    for (const { pid } of processesOf(stack)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone.
      }
    }
    await stack.llm.close();
    rmSync(stack.dataDir, { recursive: true, force: true });
  }
  stacks.clear();
});

describe.skipIf(process.platform !== 'linux')('npm run dev: stopping', () => {
  afterAll(() => console.log(`dev starts, ms to the ready line: ${readyMs.join(', ')}`));

  it('Ctrl-C during a summary: the summary finishes and commits, then Temporal stops, then Postgres; nothing is left; after a restart the compaction is there, paid once', async () => {
    const stack = await useStack();
    const first = await startReady(stack);
    const requestId = await compactionInFlight(stack, 'ctrl-c');
    // The dev worker runs under its own login (src/dev/logins.ts): the compaction in flight began on it.
    expect(await devLogins(stack)).toEqual([{ usename: 'sc_dev_worker', worker: true, migrator: false, superuser: false }]);

    const signalled = Date.now();
    first.ctrlC();
    await first.waitFor('[dev] stopping (Ctrl-C)', 10_000);
    // The worker is draining, Temporal and Postgres are still up: now the summary finishes.
    stack.llm.release();
    const { code } = await exitOf(first);
    const stopMs = Date.now() - signalled;
    expect.soft(code, first.output()).toBe(0);
    expect.soft(stopLines(first.output()).map((l) => l.step)).toEqual(ORDERED_STOP);
    await expectNothingLeft(stack);

    const second = await startReady(stack);
    const { result, rows } = await outcomeOf(stack, 'ctrl-c', requestId);
    expect(result.outcome).toBe('compacted');
    // Summarised once, committed once, by the first attempt: the one the Ctrl-C interrupted.
    expect(stack.llm.requests()).toBe(1);
    expect(rows).toEqual([{ outcome: 'compacted', attempts: 1 }]);
    await stopCleanly(second);
    console.log(`Ctrl-C to exit: ${stopMs} ms; steps: ${JSON.stringify(stopLines(first.output()))}`);
  }, 420_000);

  it('SIGTERM with a summary that outlasts the grace time: it is handed back, the stack stops in order, nothing is left; after a restart it runs again and commits once', async () => {
    const stack = await useStack({ WORKER_SHUTDOWN_GRACE_MS: '2000' });
    const first = await startReady(stack);
    const requestId = await compactionInFlight(stack, 'sigterm');

    const signalled = Date.now();
    first.child.kill('SIGTERM');
    const { code } = await exitOf(first);
    const stopMs = Date.now() - signalled;
    expect.soft(code, first.output()).toBe(0);
    const steps = stopLines(first.output());
    expect.soft(steps.map((l) => l.step)).toEqual(ORDERED_STOP);
    // The drain waited out the grace time before it cancelled the summary.
    expect.soft(steps[0]?.ms).toBeGreaterThanOrEqual(1500);
    await expectNothingLeft(stack);

    stack.llm.release();
    const second = await startReady(stack);
    const { result, rows } = await outcomeOf(stack, 'sigterm', requestId);
    expect(result.outcome).toBe('compacted');
    expect(stack.llm.requests()).toBe(2);
    expect(rows).toEqual([{ outcome: 'compacted', attempts: 2 }]);
    await stopCleanly(second);
    console.log(`SIGTERM to exit: ${stopMs} ms; steps: ${JSON.stringify(steps)}`);
  }, 420_000);

  it('a second Ctrl-C during the drain forces the stop: it exits at once and Temporal and Postgres are killed with it', async () => {
    const stack = await useStack();
    const first = await startReady(stack);
    const requestId = await compactionInFlight(stack, 'ctrl-c-twice');

    const firstSignal = Date.now();
    first.ctrlC();
    await first.waitFor('[dev] stopping (Ctrl-C)', 10_000);
    // The same signal within 500 ms counts as one delivered twice (see DUPLICATE_SIGNAL_MS).
    await sleep(Math.max(0, firstSignal + 600 - Date.now()));
    const secondSignal = Date.now();
    first.ctrlC();
    const { code } = await exitOf(first, 10_000);
    const forcedMs = Date.now() - secondSignal;
    expect.soft(code, first.output()).toBe(130);
    expect.soft(first.output()).toContain('SIGINT during the stop: forcing it');
    expect.soft(stopLines(first.output())).toEqual([]);
    // SIGKILLed: gone within moments, not after a graceful shutdown.
    const goneMs = await until('the stack processes to go', 5_000, () => (processesOf(stack).length === 0 ? Date.now() - secondSignal : undefined));
    expect(await busyPorts(stack)).toEqual([]);

    // Nothing was corrupted: the next start runs the interrupted summary again.
    stack.llm.release();
    const second = await startReady(stack);
    const { result, rows } = await outcomeOf(stack, 'ctrl-c-twice', requestId);
    expect(result.outcome).toBe('compacted');
    expect(rows).toEqual([{ outcome: 'compacted', attempts: 2 }]);
    await stopCleanly(second);
    console.log(`second Ctrl-C to exit: ${forcedMs} ms; to no process left: ${goneMs} ms`);
  }, 420_000);

  it('SIGKILL of the dev process: Temporal and Postgres exit on their own, the ports are freed, and the next start runs its own Temporal', async () => {
    const stack = await useStack();
    const first = await startReady(stack);
    const requestId = await compactionInFlight(stack, 'sigkill');

    const killed = Date.now();
    first.child.kill('SIGKILL');
    await exitOf(first, 10_000);
    const goneMs = await until('Temporal and Postgres to exit on their own', ORPHAN_TIMEOUT_MS, () =>
      processesOf(stack).length === 0 ? Date.now() - killed : undefined,
    );
    expect(await busyPorts(stack)).toEqual([]);

    stack.llm.release();
    const second = await startReady(stack);
    // Not an orphaned server adopted on the port: a fresh one, stopped with this stack.
    expect(second.output()).toContain('[dev] starting the Temporal dev server');
    expect(second.output()).not.toContain('using the Temporal server at');
    const { result, rows } = await outcomeOf(stack, 'sigkill', requestId);
    expect(result.outcome).toBe('compacted');
    expect(rows).toEqual([{ outcome: 'compacted', attempts: 2 }]);
    await stopCleanly(second);
    await expectNothingLeft(stack);
    console.log(`SIGKILL to no process left: ${goneMs} ms`);
  }, 420_000);
});
