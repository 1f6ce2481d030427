/**
 * The worker's packages are optional peer dependencies of session-compaction (a service that only
 * calls the client does not install them). `session-compaction/worker` and the
 * `session-compaction worker` command load this first, so a missing one is named with the exact
 * install line instead of a bare MODULE_NOT_FOUND from deep inside the worker.
 */
import { SessionCompactionError } from './errors';

/** What the worker needs beyond the client's own dependencies, at the versions it is built with. */
export const WORKER_PEER_DEPENDENCIES = [
  '@temporalio/worker',
  '@temporalio/activity',
  '@temporalio/interceptors-opentelemetry',
  '@opentelemetry/api',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/sdk-trace-node',
  'openai',
  '@anthropic-ai/sdk',
  'hono',
  '@hono/node-server',
] as const;

export class WorkerDependenciesMissingError extends SessionCompactionError {
  constructor(readonly missing: readonly string[]) {
    super(`the worker needs packages that are not installed: ${missing.join(', ')}; run: npm install ${missing.join(' ')}`);
    this.name = 'WorkerDependenciesMissingError';
  }
}

/** The packages of `WORKER_PEER_DEPENDENCIES` that `resolve` cannot find. */
export function missingWorkerDependencies(resolve: (name: string) => unknown = require.resolve): string[] {
  return WORKER_PEER_DEPENDENCIES.filter((name) => {
    try {
      resolve(name);
      return false;
    } catch {
      return true;
    }
  });
}

export function assertWorkerDependencies(resolve?: (name: string) => unknown): void {
  const missing = missingWorkerDependencies(resolve);
  if (missing.length > 0) throw new WorkerDependenciesMissingError(missing);
}
