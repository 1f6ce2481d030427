/**
 * `npm run dev`: the whole service on one machine. Embedded Postgres (unless DATABASE_URL is
 * set), the Temporal dev server with its Web UI (unless TEMPORAL_ADDRESS is set or a server
 * already listens on 127.0.0.1:7233), and the worker. State lives in .dev/ and survives a
 * restart. Ctrl-C stops everything this script started.
 */
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { ensureSearchAttributes } from '../src/client/search-attributes-setup';
import { DEV_POSTGRES_PORT, DEV_STATE_DIR, loadConfig } from '../src/config';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/dev/postgres';
import { findTemporalCli } from '../src/dev/temporal-cli';
import { isPortOpen, startLocalTemporal } from '../src/dev/temporal-server';
import { codecFromKeys } from '../src/codec/aes-gcm-codec';
import { codecServerOptions, createCodecServer } from '../src/codec/codec-server';
import { createSessionWorker, installRuntime } from '../src/worker';
import { SessionsClient } from '../src/client/sessions-client';
import { startInspector } from '../src/inspector/server';
import { clientConnectionOptions } from '../src/temporal-connection';

const say = (line: string) => console.log(`[dev] ${line}`);

async function main(): Promise<void> {
  const config = loadConfig({ METRICS_BIND_ADDRESS: '127.0.0.1:9464', ...process.env });
  installRuntime(config, 'WARN');
  const stops: Array<() => Promise<void>> = [];
  let stopping = false;
  const stopAll = async () => {
    if (stopping) return;
    stopping = true;
    for (const stop of stops.reverse()) await stop().catch((error) => say(`stop failed: ${error}`));
  };

  try {
    let pg: EmbeddedPostgres | undefined;
    if (process.env.DATABASE_URL) {
      say(`using Postgres from DATABASE_URL`);
    } else {
      say(`starting embedded Postgres on 127.0.0.1:${DEV_POSTGRES_PORT} (data in .dev/postgres)`);
      pg = await startEmbeddedPostgres({ dataDir: path.join(DEV_STATE_DIR, 'postgres'), port: DEV_POSTGRES_PORT, database: 'session_compaction', log: say });
      stops.push(() => pg!.stop());
    }

    // With encryption on, a local codec endpoint lets the Web UI show decrypted payloads.
    let codecUrl: string | undefined;
    const codec = codecFromKeys(config.payloadEncryptionKeys);
    if (codec) {
      const codecServer = createCodecServer(codec, codecServerOptions(config));
      await new Promise<void>((resolve) => codecServer.listen(config.codecServerPort, '127.0.0.1', resolve));
      codecUrl = `http://127.0.0.1:${config.codecServerPort}`;
      say(`codec endpoint for the Web UI: ${codecUrl}`);
      stops.push(() => new Promise<void>((resolve) => codecServer.close(() => resolve())));
    }

    const [host, portText] = config.temporal.address.split(':');
    let server: Awaited<ReturnType<typeof startLocalTemporal>> | undefined;
    let uiUrl = 'http://127.0.0.1:8233';
    if (process.env.TEMPORAL_ADDRESS || (await isPortOpen(host, Number(portText)))) {
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
      say(`starting the Temporal dev server (${cliPath ?? 'SDK download'}) on ${config.temporal.address}, state in .dev/temporal.sqlite`);
      server = await startLocalTemporal({
        cliPath,
        log: say,
        codecEndpoint: codecUrl,
        ip: host,
        port: Number(portText),
        uiPort: 8233,
        dbFilename: path.join(DEV_STATE_DIR, 'temporal.sqlite'),
        namespace: config.temporal.namespace,
      });
      uiUrl = server.uiUrl!;
      stops.push(() => server!.stop());
    }

    const worker = await createSessionWorker({ config: { ...config, databaseUrl: pg?.url ?? config.databaseUrl }, log: say });
    // The inspector: read-only pages over Postgres and the workflows (127.0.0.1 by default).
    const inspectorClient = await SessionsClient.connect({ config: { ...config, databaseUrl: pg?.url ?? config.databaseUrl } });
    const inspector = await startInspector({
      client: inspectorClient,
      temporalUiUrl: process.env.TEMPORAL_UI_URL ? config.temporalUiUrl : uiUrl,
      bindAddress: config.inspectorBindAddress,
    });
    stops.push(async () => {
      await inspector.close();
      await inspectorClient.close();
    });
    process.once('SIGINT', () => say('stopping (Ctrl-C)...'));
    console.log(
      `\nsession-compaction is ready. Temporal Web UI: ${uiUrl}  inspector: ${inspector.url}  Temporal: ${config.temporal.address}  task queue: ${config.temporal.taskQueue}`,
    );
    console.log(`metrics: http://${config.metricsBindAddress}/metrics`);
    console.log(`try: npx sessions create demo && npx sessions compact demo --json   (Ctrl-C stops everything)\n`);
    await worker.run();
  } finally {
    await stopAll();
    say('stopped');
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
