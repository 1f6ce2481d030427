/**
 * The benchmark's own stack: embedded Postgres, a Temporal dev server (in memory) started with
 * extra arguments (dynamic config, a metrics port), the local OpenAI-compatible server, and
 * worker processes of three kinds: ours (`bench/session-worker.ts`), the floor/naive worker
 * (`bench/aux-worker.ts`) and the reference design's runner (`bench/reference-runner.ts`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Config, loadConfig, PROJECT_ROOT } from '../src/config';
import { startEmbeddedPostgres } from '../src/dev/postgres';
import { findTemporalCli } from '../src/dev/temporal-cli';
import { type DevServer, freePort, startDevServer } from '../src/dev/temporal-server';
import { type FakeLlm, startFakeLlm } from '../test/support/fake-llm';

export interface BenchServer {
  address: string;
  metricsUrl: string;
  stop(): Promise<void>;
}

export async function startBenchTemporal(extraArgs: string[] = []): Promise<BenchServer> {
  const metricsPort = await freePort();
  const server: DevServer = await startDevServer({
    cliPath: findTemporalCli()!,
    port: await freePort(),
    headless: true,
    extraArgs: ['--metrics-port', String(metricsPort), ...extraArgs],
  });
  return { address: server.address, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`, stop: () => server.stop() };
}

export interface BenchStack {
  dir: string;
  env: Record<string, string>;
  config: Config;
  llm: FakeLlm;
  temporal: BenchServer;
  stop(): Promise<void>;
}

export async function startBenchStack(name: string, options: { env?: Record<string, string>; temporalArgs?: string[] } = {}): Promise<BenchStack> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort(), database: name.replace(/\W/g, '_') });
  const temporal = await startBenchTemporal(options.temporalArgs);
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

/** Runs a bench script as its own Node process (tsx as a loader, so signals reach it) and waits for `ready`. */
export async function spawnBenchProcess(script: string, env: Record<string, string>, options: { args?: string[]; ready?: string; echo?: boolean } = {}): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'bench', script), ...(options.args ?? [])], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (options.echo) child.stderr!.on('data', (b: Buffer) => process.stderr.write(b));
  if (options.ready === undefined) return child;
  let output = '';
  const deadline = setTimeout(() => child.kill('SIGKILL'), 120_000);
  try {
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-8000);
        if (output.includes(options.ready!)) resolve();
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code, signal) => reject(new Error(`${script} exited (${code ?? signal}) before it was ready:\n${output}`)));
    });
  } finally {
    clearTimeout(deadline);
  }
  return child;
}

export async function stopProcess(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

/** Sums a Prometheus counter (all label sets matching `labels`) from the dev server's metrics endpoint. */
export async function promCounter(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(url)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** The metric lines of one name (for the JSON, so a reader can see what was summed). */
export async function promLines(url: string, name: string, contains = ''): Promise<string[]> {
  const text = await (await fetch(url)).text();
  return text.split('\n').filter((l) => l.startsWith(name) && l.includes(contains));
}
