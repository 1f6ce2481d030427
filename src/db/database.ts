import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { Pool, type PoolClient } from 'pg';
import * as schema from './schema';
import { classifyPostgresError } from './postgres-errors';

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

/**
 * The current definition of every SQL function of the schema, one file per function, named
 * after it (`session_append.sql`): the numbered migrations keep each function's history, these
 * files its present. runMigrations applies them after the migrations, every time, so a
 * function changes by editing its file, and nothing else.
 */
export const FUNCTIONS_DIR = path.join(__dirname, 'functions');

interface FunctionSource {
  /** The function the file defines: its file name without `.sql`. */
  name: string;
  file: string;
  sql: string;
}

/** The file's SQL without its whole-line comments, which name functions they do not call. */
const withoutSqlComments = (sql: string) => sql.replace(/^\s*--.*$/gm, '');

/**
 * The function files in the order they are applied: each after the files of the functions it
 * calls, otherwise by name. A SQL-language body is checked against the functions it calls when
 * it is created, so those must exist in their current form first (plpgsql bodies are resolved
 * only when they run, so a cycle through plpgsql functions, broken at any edge, still applies).
 */
export function functionSources(dir = FUNCTIONS_DIR): FunctionSource[] {
  const files = readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .sort();
  const byName = new Map<string, FunctionSource>();
  for (const file of files) {
    const name = file.slice(0, -'.sql'.length);
    byName.set(name, { name, file, sql: readFileSync(path.join(dir, file), 'utf8') });
  }
  const ordered: FunctionSource[] = [];
  const visited = new Set<string>();
  const visit = (source: FunctionSource) => {
    if (visited.has(source.name)) return;
    visited.add(source.name);
    const code = withoutSqlComments(source.sql);
    for (const callee of byName.values()) {
      if (callee.name !== source.name && new RegExp(`\\b${callee.name}\\s*\\(`).test(code)) visit(callee);
    }
    ordered.push(source);
  };
  for (const source of byName.values()) visit(source);
  return ordered;
}

/**
 * Functions an earlier release defined that no file defines now. They are dropped in the
 * transaction that applies the files, after them: until then the previous callers (committed by
 * the migrations, not yet replaced) still call them, so appends never meet a missing function.
 */
const RETIRED_FUNCTIONS = ['sc_chat_problem(jsonb)', 'sc_responses_problem(jsonb)', 'sc_agents_problem(jsonb)'];

/** Applies every function file, in one transaction: a file that fails leaves the previous definitions in place. */
async function applyFunctionSources(client: PoolClient): Promise<void> {
  await client.query('BEGIN');
  try {
    for (const source of functionSources()) {
      try {
        await client.query(source.sql);
      } catch (error) {
        throw new Error(`applying ${source.file} failed: ${(error as Error).message}`, { cause: error });
      }
    }
    for (const retired of RETIRED_FUNCTIONS) await client.query(`DROP FUNCTION IF EXISTS ${retired}`);
    // The level workers check at start (checkSchemaLevel), with the functions it describes.
    await client.query(
      `INSERT INTO schema_level (one, migrated_to, functions_digest) VALUES (true, $1, $2)
       ON CONFLICT (one) DO UPDATE SET migrated_to = EXCLUDED.migrated_to, functions_digest = EXCLUDED.functions_digest, applied_at = now()`,
      [lastMigrationMillis(), functionsDigest()],
    );
    // The roles' privileges (docs/security.md, "Roles"): the functions just applied included.
    await client.query('SELECT sc_apply_grants()');
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

/** When this release's last migration was generated: drizzle records it as that migration's `created_at`. */
function lastMigrationMillis(): number {
  const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8')) as { entries: Array<{ when: number }> };
  return Math.max(...journal.entries.map((entry) => entry.when));
}

/** SHA-256 of the function files (names and contents, in the order they are applied): which functions a release expects. */
export function functionsDigest(dir = FUNCTIONS_DIR): string {
  const hash = createHash('sha256');
  for (const source of functionSources(dir)) hash.update(`${source.file}\0${source.sql}\0`);
  return hash.digest('hex');
}

/**
 * The database is behind the release that checks it: its migrations, or its function files,
 * are older. Nothing was started; run `npm run db:migrate` (or `session-compaction migrate`)
 * with the migrator's DATABASE_URL, then start again.
 */
export class SchemaBehindError extends Error {
  constructor(public readonly detail: string) {
    super(
      `the database schema is behind this release (${detail}): run \`npm run db:migrate\` (or \`session-compaction migrate\`) as the migrator first, ` +
        'or set MIGRATE_ON_START=true where the worker may run DDL (a single-process setup)',
    );
    this.name = 'SchemaBehindError';
  }
}

/**
 * What a worker does at start instead of migrating: reads the level the last runMigrations
 * recorded (schema_level, migration 0026) and throws SchemaBehindError unless it is this
 * release's (its newest migration and the digest of its function files) or a newer release's
 * (an older worker during a rollout keeps running on the newer schema, as runMigrations keeps
 * that release's functions). Reads only: the worker's role needs no DDL for it.
 */
export async function checkSchemaLevel(handle: DatabaseHandle): Promise<'current' | 'newer'> {
  const level = await handle.pool
    .query<{ migrated_to: string; functions_digest: string }>('SELECT migrated_to, functions_digest FROM schema_level')
    .catch((error: unknown) => {
      // 42P01 (undefined_table): migrated by a release older than 0026, or never.
      if ((error as { code?: string }).code === '42P01') return undefined;
      throw error;
    });
  const row = level?.rows[0];
  if (!row) throw new SchemaBehindError('no migration level recorded: the database was never migrated by this release');
  const migratedTo = Number(row.migrated_to);
  const expected = lastMigrationMillis();
  if (migratedTo > expected) return 'newer';
  if (migratedTo < expected) {
    throw new SchemaBehindError(`migrated to ${new Date(migratedTo).toISOString()}, this release's newest migration is of ${new Date(expected).toISOString()}`);
  }
  if (row.functions_digest !== functionsDigest()) {
    throw new SchemaBehindError(
      `its SQL functions are not this release's function files (digest ${row.functions_digest.slice(0, 12)}, expected ${functionsDigest().slice(0, 12)})`,
    );
  }
  return 'current';
}

/** An arbitrary, fixed key: concurrent workers starting together migrate one at a time. */
const MIGRATION_LOCK_KEY = 727_001;

export async function runMigrations(handle: DatabaseHandle): Promise<void> {
  const client = await handle.pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      await migrate(drizzle(client, { schema }), { migrationsFolder: MIGRATIONS_DIR });
      // A database a newer release migrated (an older worker restarting during a rollout)
      // keeps that release's functions, as it keeps its tables.
      const applied = await client.query<{ last: string | null }>('select max(created_at) as last from drizzle.__drizzle_migrations');
      if (Number(applied.rows[0].last) <= lastMigrationMillis()) await applyFunctionSources(client);
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

/**
 * Runs an idempotent read, retrying while the database is unreachable for now (a transient
 * error of classifyPostgresError, src/db/postgres-errors.ts), up to `timeoutMs`.
 * Never use it for writes whose acknowledgement could be lost (an append): the caller
 * decides about those.
 */
export async function readWithRetry<T>(read: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
    try {
      return await read();
    } catch (error) {
      if (!classifyPostgresError(error).transient || Date.now() + delay > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
