/**
 * The worker's packages are optional peer dependencies of session-compaction (a service that only
 * calls the client does not install them). `session-compaction/worker` and the
 * `session-compaction worker` command load this first, so a missing one is named with the exact
 * install line instead of a bare MODULE_NOT_FOUND from deep inside the worker.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
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

/**
 * `name@range` as this package's `peerDependencies` name it (package.json, beside src/ and
 * dist/ alike). An install line without the ranges takes each package's latest, which npm then
 * refuses against our peers (`@opentelemetry/resources` 2.x against ^1.30.1: ERESOLVE).
 */
function installSpecs(names: readonly string[], packageJsonPath = path.join(__dirname, '..', 'package.json')): string[] {
  let peers: Record<string, string> = {};
  try {
    peers = (JSON.parse(readFileSync(packageJsonPath, 'utf8')) as { peerDependencies?: Record<string, string> }).peerDependencies ?? {};
  } catch {
    // No readable package.json: the names alone.
  }
  return names.map((name) => (peers[name] ? `${name}@${peers[name]}` : name));
}

export class WorkerDependenciesMissingError extends SessionCompactionError {
  constructor(readonly missing: readonly string[]) {
    super(`the worker needs packages that are not installed: ${missing.join(', ')}; run: npm install ${installSpecs(missing).join(' ')}`);
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
