/**
 * The benchmark's own stack: the scratch stack (test/support/scratch-stack.ts: embedded
 * Postgres, an in-memory Temporal dev server, the local OpenAI-compatible server) with the dev
 * server's metrics on and extra dev-server arguments (dynamic config), and worker processes of
 * three kinds: ours (`bench/session-worker.ts`), the floor/naive worker (`bench/aux-worker.ts`)
 * and the reference design's runner (`bench/reference-runner.ts`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../src/config';
import { type ScratchStack, type ScratchTemporal, startScratchStack } from '../test/support/scratch-stack';

export interface BenchStack extends ScratchStack {
  temporal: ScratchTemporal & { metricsUrl: string };
}

/** The scratch stack with the dev server's metrics on (and any more dev-server arguments). */
export async function startBenchStack(name: string, options: { env?: Record<string, string>; temporalArgs?: string[] } = {}): Promise<BenchStack> {
  const stack = await startScratchStack(name, { ...options, metrics: true });
  const { metricsUrl } = stack.temporal;
  if (metricsUrl === undefined) throw new Error('the scratch stack started without a metrics endpoint');
  return { ...stack, temporal: { ...stack.temporal, metricsUrl } };
}

/** Runs a bench script as its own Node process (tsx as a loader, so signals reach it) and waits for `ready`. */
export async function spawnBenchProcess(
  script: string,
  env: Record<string, string>,
  options: { args?: string[]; ready?: string; echo?: boolean } = {},
): Promise<ChildProcess> {
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
