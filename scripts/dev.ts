/**
 * `npm run dev`: the whole service on one machine. Embedded Postgres (unless DATABASE_URL is
 * set), the Temporal dev server with its Web UI (unless TEMPORAL_ADDRESS is set or a server
 * already listens on its address), the migrations, then the worker and the inspector. State lives in .dev/ (or
 * DEV_DATA_DIR) and survives a restart.
 *
 * Stopping. SIGINT (Ctrl-C), SIGTERM or SIGHUP stops everything this script started, each
 * part while what it needs is still up: first the worker drains (it stops polling; a summary
 * in flight has WORKER_SHUTDOWN_GRACE_MS to finish and commit, after which it is cancelled
 * and Temporal hands it to the next worker), then the inspector and the codec endpoint, then
 * the Temporal dev server, then Postgres; then the script exits 0. A second signal during
 * that forces the stop: Temporal and Postgres are SIGKILLed with their process groups and
 * the script exits at once (a summary in flight then runs again after the next start).
 *
 * Postgres and the Temporal dev server run under tethers (src/dev/tether.ts): each in a
 * process group of its own, so a terminal's Ctrl-C reaches this script only and the order
 * above holds; and each stops by itself when this script dies in any other way (SIGKILL, a
 * crash), so neither outlives it holding its port. If this script's parent dies (the tsx or
 * npm in front of it), it stops as on SIGTERM.
 */
import { constants } from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { ensureSearchAttributes } from '../src/client/search-attributes-setup';
import { PROJECT_ROOT, loadConfig } from '../src/config';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/dev/postgres';
import { devStackSettings, findTemporalCli } from '../src/dev/temporal-cli';
import { isPortOpen, startLocalTemporal } from '../src/dev/temporal-server';
import { ensureDevLogins } from '../src/dev/logins';
import { killTethered } from '../src/dev/tether';
import { codecFromKeys } from '../src/codec/aes-gcm-codec';
import { codecServerOptions, createCodecServer } from '../src/codec/codec-server';
import { openDatabase, runMigrations } from '../src/db/database';
import { createSessionWorker, installRuntime } from '../src/worker';
import { SessionsClient } from '../src/client/sessions-client';
import { startInspector } from '../src/inspector/server';
import { clientConnectionOptions } from '../src/temporal-connection';

const say = (line: string) => console.log(`[dev] ${line}`);
// A closed terminal or a dead parent's pipe must not turn a log line into a crash mid-shutdown.
process.stdout.on('error', () => undefined);
process.stderr.on('error', () => undefined);

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
/**
 * The same signal again within this window is the first one delivered twice, not a second
 * Ctrl-C: tsx passes a Ctrl-C on to its child unless the child confirms, within 30 ms, that
 * it got it from the terminal itself.
 */
const DUPLICATE_SIGNAL_MS = 500;

interface Stop {
  /** Logged once it is done. */
  done: string;
  stop(): Promise<void>;
}

async function main(): Promise<number> {
  const settings = devStackSettings();
  const externalTemporal = Boolean(process.env.TEMPORAL_ADDRESS);
  const config = loadConfig({
    METRICS_BIND_ADDRESS: '127.0.0.1:9464',
    ...process.env,
    ...(externalTemporal ? {} : { TEMPORAL_ADDRESS: `127.0.0.1:${settings.temporalPort}` }),
  });
  installRuntime(config, 'WARN');
  const where = (file: string) => {
    const full = path.join(settings.dataDir, file);
    return full.startsWith(PROJECT_ROOT + path.sep) ? path.relative(PROJECT_ROOT, full) : full;
  };

  // What has been started, in order; stopped in reverse.
  const stops: Stop[] = [];
  let stopping: { signal?: NodeJS.Signals; at: number } | undefined;
  let stopRequested!: () => void;
  const stopRequest = new Promise<void>((resolve) => (stopRequested = resolve));
  const requestStop = (why: string, signal?: NodeJS.Signals) => {
    stopping = { signal, at: Date.now() };
    say(
      `stopping (${why}): the worker first (a summary in flight has ${config.worker.shutdownGraceTimeMs / 1000} s to finish), then Temporal, then Postgres. ` +
        'Ctrl-C again forces.',
    );
    stopRequested();
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (!stopping) return requestStop(signal === 'SIGINT' ? 'Ctrl-C' : signal, signal);
    if (signal === stopping.signal && Date.now() - stopping.at < DUPLICATE_SIGNAL_MS) return;
    say(`${signal} during the stop: forcing it (Temporal and Postgres are killed; a summary in flight runs again after the next start)`);
    killTethered();
    process.exit(128 + constants.signals[signal]);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  // Orphaned (the tsx or npm that ran this died): stop as on SIGTERM rather than run on unseen.
  const parent = process.ppid;
  const parentWatch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(parentWatch);
    if (!stopping) requestStop(`parent process ${parent} is gone`);
  }, 1000);
  parentWatch.unref();

  let exitCode = 0;
  const start = async (): Promise<void> => {
    let pg: EmbeddedPostgres | undefined;
    if (process.env.DATABASE_URL) {
      say(`using Postgres from DATABASE_URL`);
    } else {
      say(`starting embedded Postgres on 127.0.0.1:${settings.postgresPort} (data in ${where('postgres')})`);
      pg = await startEmbeddedPostgres({
        dataDir: path.join(settings.dataDir, 'postgres'),
        port: settings.postgresPort,
        database: 'session_compaction',
        log: say,
        tethered: true,
      });
      stops.push({ done: 'Postgres stopped', stop: () => pg!.stop() });
    }
    if (stopping) return;
    const databaseUrl = pg?.url ?? config.databaseUrl;

    // With encryption on, a local codec endpoint lets the Web UI show decrypted payloads. The dev
    // server's Web UI has no login, so it has no token to forward: without CODEC_AUTH_TOKEN the
    // endpoint serves without one (on 127.0.0.1, this machine only), and says so.
    let codecUrl: string | undefined;
    const codec = codecFromKeys(config.payloadEncryptionKeys, config.temporal.namespace);
    if (codec) {
      const insecureNoAuth = config.codecInsecureNoAuth || config.codecAuthToken === undefined;
      const codecServer = createCodecServer(codec, { ...codecServerOptions(config), insecureNoAuth });
      await new Promise<void>((resolve) => codecServer.listen(config.codecServerPort, '127.0.0.1', resolve));
      codecUrl = `http://127.0.0.1:${config.codecServerPort}`;
      say(
        `codec endpoint for the Web UI: ${codecUrl}${config.codecAuthToken ? '' : ' (no token: any local process may decrypt; set CODEC_AUTH_TOKEN to require one)'}`,
      );
      stops.push({ done: 'codec endpoint stopped', stop: () => new Promise<void>((resolve) => codecServer.close(() => resolve())) });
    }

    const [host, portText] = config.temporal.address.split(':');
    let uiUrl = `http://127.0.0.1:${settings.temporalUiPort}`;
    if (externalTemporal || (await isPortOpen(host, Number(portText)))) {
      say(`using the Temporal server at ${config.temporal.address}`);
      const connection = await Connection.connect(clientConnectionOptions(config.temporal));
      const added = await ensureSearchAttributes(connection, config.temporal.namespace).catch((error) => {
        say(`could not register search attributes: ${error.message}`);
        return [];
      });
      if (added.length) say(`registered search attributes ${added.join(', ')}`);
      await connection.close();
    } else {
      const cliPath = findTemporalCli({ log: say });
      say(`starting the Temporal dev server (${cliPath ?? 'SDK download'}) on ${config.temporal.address}, state in ${where('temporal.sqlite')}`);
      const server = await startLocalTemporal({
        cliPath,
        log: say,
        codecEndpoint: codecUrl,
        ip: host,
        port: Number(portText),
        uiPort: settings.temporalUiPort,
        dbFilename: path.join(settings.dataDir, 'temporal.sqlite'),
        namespace: config.temporal.namespace,
        tethered: true,
      });
      uiUrl = server.uiUrl!;
      stops.push({ done: 'Temporal dev server stopped', stop: () => server.stop() });
    }
    if (stopping) return;

    // The deploy step first (`npm run db:migrate`), as the dev stack's Postgres superuser: the
    // worker only checks the migration level at start, it runs no DDL. On the embedded Postgres,
    // the worker and the inspector then log in under their own roles (src/dev/logins.ts); on a
    // DATABASE_URL of yours, the worker uses it and the inspector INSPECTOR_DATABASE_URL.
    const migrator = openDatabase(databaseUrl, { max: 1 });
    let logins: { worker: string; reader: string };
    try {
      await runMigrations(migrator);
      logins = pg
        ? await ensureDevLogins(migrator, databaseUrl)
        : { worker: databaseUrl, reader: process.env.INSPECTOR_DATABASE_URL ? config.inspectorDatabaseUrl : databaseUrl };
    } finally {
      await migrator.close();
    }
    say(
      `migrations applied${pg ? `; the worker runs as ${new URL(logins.worker).username} (sc_worker), the inspector as ${new URL(logins.reader).username} (sc_reader)` : ''}`,
    );
    if (stopping) return;
    const worker = await createSessionWorker({ config: { ...config, databaseUrl: logins.worker }, log: say });
    const running = worker.run();
    // Its failure is reported by its stop below, not as an unhandled rejection meanwhile.
    running.catch(() => undefined);
    // Draining: stop polling, let the summaries in flight finish (up to the grace time), then resolve.
    stops.push({
      done: 'worker drained',
      async stop() {
        if (worker.worker.getState() === 'RUNNING') worker.shutdown();
        await running;
      },
    });
    if (stopping) return;
    // The inspector: read-only pages over Postgres and the workflows (127.0.0.1 by default).
    const inspectorClient = await SessionsClient.connect({ config: { ...config, databaseUrl: logins.reader } });
    const inspector = await startInspector({
      client: inspectorClient,
      temporalUiUrl: process.env.TEMPORAL_UI_URL ? config.temporalUiUrl : uiUrl,
      bindAddress: config.inspectorBindAddress,
      authToken: config.inspectorAuthToken,
      allowedHosts: config.inspectorAllowedHosts,
    });
    // Before the worker in the list, so stopped after it: it only reads.
    stops.splice(stops.length - 1, 0, {
      done: 'inspector stopped',
      async stop() {
        await inspector.close();
        await inspectorClient.close();
      },
    });
    if (stopping) return;
    console.log(
      `\nsession-compaction is ready. Temporal Web UI: ${uiUrl}  inspector: ${inspector.url}  Temporal: ${config.temporal.address}  task queue: ${config.temporal.taskQueue}`,
    );
    if (config.metricsBindAddress) console.log(`metrics: http://${config.metricsBindAddress}/metrics`);
    console.log(`try: npx sessions create demo && npx sessions compact demo --json   (Ctrl-C stops everything)\n`);
    // Until a stop is asked for, or the worker stops by itself (its stop reports a fatal error).
    await Promise.race([running.catch(() => undefined), stopRequest]);
    if (!stopping) say('the worker stopped by itself; stopping the rest');
  };

  try {
    await start();
  } catch (error) {
    console.error(error);
    exitCode = 1;
  }
  for (const step of stops.reverse()) {
    const began = Date.now();
    try {
      await step.stop();
      say(`${step.done} (${Date.now() - began} ms)`);
    } catch (error) {
      say(`failed before "${step.done}": ${String(error)}`);
      exitCode = 1;
    }
  }
  say('stopped');
  return exitCode;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    killTethered();
    process.exit(1);
  },
);
