/** Runs `src/worker.ts` (or a compiled worker) as a separate process, as `npm run worker` does, and waits until it polls. */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/config';

/** A worker process, with everything it printed so far (its log included). */
export type WorkerProcess = ChildProcess & { output(): string };

export async function spawnWorkerProcess(
  env: Record<string, string>,
  options: {
    workflowBundlePath?: string;
    echo?: boolean;
    /** A compiled worker (`npm run build`'s worker.js), run with plain node. */ compiledWorker?: string;
  } = {},
): Promise<WorkerProcess> {
  // tsx as a loader in the worker's own process (not the tsx command, which runs the script
  // in a child): a SIGKILL must reach the worker itself, not a wrapper that leaves it orphaned.
  const args = options.compiledWorker ? [options.compiledWorker] : ['--import', 'tsx', path.join(PROJECT_ROOT, 'src/worker.ts')];
  const child = spawn(process.execPath, args, {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env, ...(options.workflowBundlePath ? { WORKFLOW_BUNDLE_PATH: options.workflowBundlePath } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-64_000);
      if (output.includes('worker ready')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    if (options.echo) child.stderr!.on('data', (b: Buffer) => process.stderr.write(b));
    child.once('exit', (code, signal) => reject(new Error(`worker process exited (${code ?? signal}) before it was ready:\n${output}`)));
  });
  return Object.assign(child, { output: () => output });
}
