/**
 * The worker: runs session workflows and the compaction activities against the configured
 * Temporal and Postgres. `npm run worker` runs it alone; `npm run dev` runs it inside the
 * dev stack. It does not migrate: at start it checks that the database is at this release's
 * migration level and refuses to run behind it (SchemaBehindError; `npm run db:migrate` is the
 * deploy step), unless MIGRATE_ON_START=true.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { createCompactionActivities, type CompactionActivityDeps } from './activities/compaction';
import { withActivityFailures } from './activities/failures';
import { createNativeCompaction } from './activities/native-compaction';
import { createRetentionActivities, type RetentionActivityDeps } from './activities/retention';
import { createSummariser, type Summariser } from './activities/summariser';
import { type Config, loadConfig } from './config';
import { encryptedDataConverter } from './codec/aes-gcm-codec';
import { checkSchemaLevel, openDatabase, runMigrations, type DatabaseHandle } from './db/database';
import { installTracingFromConfig, shutdownTracing, tracedSummariser, workerTracingPlugin } from './tracing';
import { describeTemporalSecurity, nativeConnectionOptions } from './temporal-connection';

export interface SessionWorkerOptions {
  config: Config;
  connection?: NativeConnection;
  database?: DatabaseHandle;
  summariser?: Summariser;
  /** Path of a prebuilt workflow bundle (bundleWorkflowCode's code, written to a file); see workflowCode. */
  workflowBundlePath?: string;
  /** Test seam, see CompactionActivityDeps.heartbeat. */
  heartbeat?: CompactionActivityDeps['heartbeat'];
  /** Test seam, see RetentionActivityDeps.beforeExportWrite. */
  beforeRetentionExportWrite?: RetentionActivityDeps['beforeExportWrite'];
  workerOptions?: Partial<WorkerOptions>;
  log?: (line: string) => void;
}

export interface SessionWorker {
  worker: Worker;
  summariser: Summariser;
  /** Runs until shutdown; closes what this function opened. */
  run(): Promise<void>;
  shutdown(): void;
}

export async function createSessionWorker(options: SessionWorkerOptions): Promise<SessionWorker> {
  const { config } = options;
  const say = options.log ?? ((line: string) => console.log(line));
  // Read the TLS files before anything else starts, so a wrong path fails fast and clearly.
  const connectionOptions = options.connection ? undefined : nativeConnectionOptions(config.temporal);
  const database = options.database ?? openDatabase(config.databaseUrl);
  try {
    if (config.migrateOnStart) {
      await runMigrations(database);
      say('migrations applied at start (MIGRATE_ON_START=true)');
    } else if ((await checkSchemaLevel(database)) === 'newer') {
      say('the database was migrated by a newer release: running on its schema (a rollout)');
    }
  } catch (error) {
    if (!options.database) await database.close();
    throw error;
  }
  const connection = options.connection ?? (await NativeConnection.connect(connectionOptions!));
  const tracing = installTracingFromConfig(config);
  const untraced =
    options.summariser ??
    createSummariser(config.llm, {
      stallTimeoutMs: config.compaction.stallTimeoutMs,
      requestTimeoutMs: config.compaction.requestTimeoutMs,
      streamTimeoutMs: config.compaction.attemptTimeoutMs,
      secrets: config.secrets,
    });
  // With tracing on, the LLM call gets its own span under the activity's.
  const summariser = tracing ? tracedSummariser(untraced) : untraced;
  say(`summariser: ${summariser.description}`);

  const compactionActivities = createCompactionActivities({
    db: database.db,
    summariser,
    plan: { tailTokenBudget: config.compaction.tailTokenBudget, headGroups: config.compaction.headGroups, minTailGroups: config.compaction.minTailGroups },
    summaryInputTokens: config.compaction.summaryInputTokens,
    ledger: { percent: config.compaction.ledgerPercent, maxTokens: config.compaction.ledgerMaxTokens, requestChars: config.compaction.ledgerRequestChars },
    masking: config.compaction.masking ? { targetPercent: config.compaction.maskingTargetPercent } : undefined,
    summaryLayout: config.compaction.summaryLayout,
    rungs: config.compaction.rungs,
    minGain: config.compaction.minGain,
    native: createNativeCompaction(config.native),
    autoCompaction: config.autoCompaction,
    heartbeatIntervalMs: Math.max(100, Math.floor(config.compaction.leaseTtlMs / 4)),
    heartbeat: options.heartbeat,
  });
  // Failures go to history, the log and spans without a statement's parameters or a secret.
  const activities = withActivityFailures(
    {
      ...compactionActivities,
      ...createRetentionActivities({
        db: database.db,
        exportDir: config.retentionExportDir,
        beforeExportWrite: options.beforeRetentionExportWrite,
      }),
    },
    { secrets: config.secrets, databaseUrl: config.databaseUrl },
  );
  const encrypted = encryptedDataConverter(config.payloadEncryptionKeys, config.temporal.namespace);
  if (encrypted) say('payloads and failure messages in Temporal history are encrypted (AES-256-GCM)');
  const tracingPlugin = tracing ? workerTracingPlugin() : undefined;
  if (tracingPlugin) say('tracing: spans exported (OpenTelemetry)');
  const workflows = workflowCode({
    bundlePath: options.workflowBundlePath ?? process.env.WORKFLOW_BUNDLE_PATH,
    encrypted: Boolean(encrypted),
    tracing: Boolean(tracingPlugin),
  });
  say(`workflows: ${workflows.description}`);
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    activities,
    ...(encrypted ? { dataConverter: encrypted } : {}),
    ...config.worker,
    shutdownGraceTime: config.worker.shutdownGraceTimeMs,
    ...workflows.options,
    ...(tracingPlugin ? { plugins: [tracingPlugin] } : {}),
    ...options.workerOptions,
  });
  return {
    worker,
    summariser,
    async run() {
      try {
        await worker.run();
      } finally {
        if (!options.connection) await connection.close();
        if (!options.database) await database.close();
      }
    },
    shutdown: () => worker.shutdown(),
  };
}

/**
 * The workflow bundles `npm run build` writes beside the compiled worker (scripts/build.ts).
 * The failure converter is part of a bundle, so there is one per data converter the worker
 * may use: with payload encryption (the failure converter that encodes failure messages) and
 * without (the SDK's default), each built exactly as this worker would bundle at start.
 */
export const PREBUILT_WORKFLOW_BUNDLES = { encrypted: 'workflow-bundle.js', unencrypted: 'workflow-bundle-unencrypted.js' } as const;

/**
 * Where the worker takes its workflow code from, in this order:
 * - with tracing on, it bundles the workflows at start: the tracing plugin adds workflow
 *   interceptor modules, which must be bundled with them (a prebuilt bundle has none);
 * - an explicit prebuilt bundle (`workflowBundlePath`, `WORKFLOW_BUNDLE_PATH`), taken as is;
 * - the compiled worker (dist/worker.js) takes the bundle `npm run build` wrote beside it,
 *   the one for its data converter (PREBUILT_WORKFLOW_BUNDLES);
 * - otherwise (the TypeScript sources through tsx, or a dist without bundles) it bundles
 *   the workflows at start, from the workflows module beside this file.
 */
export function workflowCode(options: { bundlePath?: string; encrypted: boolean; tracing: boolean }): {
  options: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'>;
  description: string;
} {
  const bundleAtStart = (why: string) => {
    // index.ts beside src/worker.ts, index.js beside the compiled dist/worker.js.
    const workflowsPath = path.join(__dirname, 'workflows', `index${path.extname(__filename)}`);
    return { options: { workflowsPath }, description: `bundled at start from ${workflowsPath} (${why})` };
  };
  if (options.tracing) return bundleAtStart('tracing adds workflow interceptors');
  if (options.bundlePath) return { options: { workflowBundle: { codePath: options.bundlePath } }, description: `prebuilt bundle ${options.bundlePath}` };
  const beside = path.join(__dirname, options.encrypted ? PREBUILT_WORKFLOW_BUNDLES.encrypted : PREBUILT_WORKFLOW_BUNDLES.unencrypted);
  if (existsSync(beside)) return { options: { workflowBundle: { codePath: beside } }, description: `prebuilt bundle ${beside}` };
  return bundleAtStart('no prebuilt bundle');
}

/**
 * Installs the Temporal runtime for this process, with a Prometheus endpoint when configured.
 * Must run before any connection is made. Our own metrics (see docs/operations.md) are
 * emitted through the same runtime, so one endpoint serves both.
 */
export function installRuntime(config: Config, logLevel: 'INFO' | 'WARN' | 'ERROR' = 'INFO'): void {
  Runtime.install({
    logger: new DefaultLogger(logLevel),
    ...(config.metricsBindAddress ? { telemetryOptions: { metrics: { prometheus: { bindAddress: config.metricsBindAddress } } } } : {}),
  });
}

/** The `session-compaction worker` command (and `node dist/worker.js`): runs until SIGINT or SIGTERM. */
export async function runWorker(): Promise<void> {
  const config = loadConfig();
  installRuntime(config);
  if (config.metricsBindAddress) console.log(`metrics: http://${config.metricsBindAddress}/metrics`);
  const sessionWorker = await createSessionWorker({ config });
  console.log(
    `worker ready: task queue ${config.temporal.taskQueue} on ${config.temporal.address} (namespace ${config.temporal.namespace}, ${describeTemporalSecurity(config.temporal)})`,
  );
  // SIGINT and SIGTERM make the worker stop polling and let in-flight summaries finish
  // (up to WORKER_SHUTDOWN_GRACE_MS); what does not finish is retried by another worker.
  await sessionWorker.run();
  await shutdownTracing();
  console.log('worker stopped');
}

if (require.main === module) {
  runWorker().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
