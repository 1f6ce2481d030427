/** Starts the official Temporal dev server (`temporal server start-dev`) as a child process. */
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { spawnTethered } from './tether';

export interface DevServerOptions {
  cliPath: string;
  ip?: string;
  port: number;
  uiPort?: number;
  headless?: boolean;
  /** SQLite file that keeps state across restarts; in memory when absent. */
  dbFilename?: string;
  namespace?: string;
  logLevel?: string;
  /** A codec endpoint the Web UI uses to decode encrypted payloads. */
  codecEndpoint?: string;
  onOutput?: (chunk: string) => void;
  /** More `temporal server start-dev` arguments (the benchmark: dynamic config, metrics port). */
  extraArgs?: string[];
  /**
   * Run the server under a tether (src/dev/tether.ts), in a process group of its own: a
   * terminal's Ctrl-C does not reach it (the caller stops it, in its own order), and it
   * stops by itself (SIGTERM, then SIGKILL after 10 s) when this process dies in any way,
   * so it never outlives it and holds the port. `npm run dev` uses this.
   */
  tethered?: boolean;
}

export interface DevServer {
  address: string;
  uiUrl?: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

export function isPortOpen(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const ip = options.ip ?? '127.0.0.1';
  const args = ['server', 'start-dev', '--ip', ip, '--port', String(options.port), '--log-level', options.logLevel ?? 'warn'];
  if (options.headless) args.push('--headless');
  else if (options.uiPort) args.push('--ui-port', String(options.uiPort));
  if (options.dbFilename) args.push('--db-filename', options.dbFilename);
  if (options.namespace && options.namespace !== 'default') args.push('--namespace', options.namespace);
  if (options.codecEndpoint) args.push('--ui-codec-endpoint', options.codecEndpoint);
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${name}=${type}`);
  if (options.extraArgs) args.push(...options.extraArgs);

  const tethered = options.tethered ? spawnTethered(options.cliPath, args, { stopSignal: 'SIGTERM', graceMs: 10_000 }) : undefined;
  const child = tethered?.process ?? spawn(options.cliPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // SIGKILL of a tether alone would leave the server running: kill its whole process group.
  const kill = () => (tethered ? tethered.kill() : child.kill('SIGKILL'));
  let output = '';
  const collect = (chunk: Buffer) => {
    const text = chunk.toString();
    output = (output + text).slice(-4000);
    options.onOutput?.(text);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const deadline = Date.now() + 60_000;
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));
  while (!(await isPortOpen(ip, options.port))) {
    if (exitCode !== undefined) throw new Error(`temporal server start-dev exited with ${exitCode}:\n${output}`);
    if (Date.now() > deadline) {
      kill();
      throw new Error(`temporal dev server did not listen on ${ip}:${options.port} within 60 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    address: `${ip}:${options.port}`,
    uiUrl: options.headless ? undefined : `http://${ip}:${options.uiPort ?? options.port + 1000}`,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (tethered) return tethered.stop('SIGTERM', 10_000);
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Starts a local Temporal dev server: the installed official CLI when there is one (see
 * findTemporalCli), otherwise, as a last resort on a machine with internet, the SDK's own
 * download of the same CLI.
 */
export async function startLocalTemporal(
  options: Omit<DevServerOptions, 'cliPath'> & { cliPath?: string; log?: (line: string) => void },
): Promise<Omit<DevServer, 'process'>> {
  if (options.cliPath) return startDevServer({ ...options, cliPath: options.cliPath });
  options.log?.('no Temporal CLI found or installable here; trying the SDK download (needs internet)');
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  const { CompactionCount, SessionHead, SessionLineage, SessionSource } = await import('../workflows/search-attributes');
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ip: options.ip ?? '127.0.0.1',
      port: options.port,
      ui: !options.headless,
      uiPort: options.headless ? undefined : options.uiPort,
      dbFilename: options.dbFilename,
      namespace: options.namespace,
      searchAttributes: [SessionLineage, SessionHead, SessionSource, CompactionCount],
    },
  });
  const ip = options.ip ?? '127.0.0.1';
  return {
    address: `${ip}:${options.port}`,
    uiUrl: options.headless ? undefined : `http://${ip}:${options.uiPort ?? options.port + 1000}`,
    stop: () => env.teardown(),
  };
}
