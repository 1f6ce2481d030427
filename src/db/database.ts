import path from 'node:path';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { Pool } from 'pg';
import * as schema from './schema';

export type Database = NodePgDatabase<typeof schema>;

export interface DatabaseHandle {
  db: Database;
  pool: Pool;
  close(): Promise<void>;
}

export function openDatabase(url: string, options: { max?: number } = {}): DatabaseHandle {
  const pool = new Pool({ connectionString: url, max: options.max ?? 10 });
  // A client that loses its server (a Postgres restart) emits 'error'; unhandled, that
  // crashes the process. The query in flight fails on its own and is retried by its caller
  // (the activity, by Temporal), so the event itself needs nothing more than a listener.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = drizzle(pool, { schema });
  return { db, pool, close: () => pool.end() };
}

export const MIGRATIONS_DIR = path.join(__dirname, 'migrations');

/** An arbitrary, fixed key: concurrent workers starting together migrate one at a time. */
const MIGRATION_LOCK_KEY = 727_001;

export async function runMigrations(handle: DatabaseHandle): Promise<void> {
  const client = await handle.pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      await migrate(drizzle(client, { schema }), { migrationsFolder: MIGRATIONS_DIR });
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    client.release();
  }
}

/** Creates the database named in the URL if the server lacks it (the dev stack's first start). */
export async function ensureDatabaseExists(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) return;
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const pool = new Pool({ connectionString: admin.toString(), max: 1 });
  try {
    const existing = await pool.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (existing.rowCount === 0) await pool.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } finally {
    await pool.end();
  }
}

/** Connection-level failures (the server restarting, a dropped connection): a read may be retried. */
function isTransientDatabaseError(error: unknown): boolean {
  for (let e: unknown = error; e; e = (e as { cause?: unknown }).cause) {
    const code = String((e as { code?: unknown }).code ?? '');
    const message = String((e as { message?: unknown }).message ?? '');
    if (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03') return true;
    if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE') return true;
    if (/Connection terminated|connection terminated|Client has encountered a connection error/.test(message)) return true;
  }
  return false;
}

/**
 * Runs an idempotent read, retrying while the database is unreachable, up to `timeoutMs`.
 * Never use it for writes whose acknowledgement could be lost (an append): the caller
 * decides about those.
 */
export async function readWithRetry<T>(read: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
    try {
      return await read();
    } catch (error) {
      if (!isTransientDatabaseError(error) || Date.now() + delay > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
