/**
 * Every SQL function of the schema has one source: the file named after it in
 * src/db/functions (FUNCTIONS_DIR), which runMigrations applies after the numbered
 * migrations. Checked on the migrated database, inside a transaction that is rolled back:
 * - each file alone, applied with every function dropped, creates its own function and no
 *   other (so no function is defined in two files, or in a file named after another);
 * - all files, applied in runMigrations' order with every function dropped, create exactly
 *   the functions of the migrated database with the same definitions (so none is left to a
 *   migration alone, and each file creates what the database holds, with SQL-language
 *   bodies checked against the functions they call).
 * The same check on folders with one of those faults shows that it finds them.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pool, PoolClient } from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { FUNCTIONS_DIR, functionSources, runMigrations } from '../../src/db/database';
import { useTestStack } from '../support/stack';

const stack = useTestStack({ noWorker: true });

/** The public schema's functions: signature → pg_get_functiondef. */
async function functionsOf(client: PoolClient): Promise<Map<string, { name: string; definition: string }>> {
  const { rows } = await client.query<{ signature: string; name: string; definition: string }>(
    `select p.oid::regprocedure::text as signature, p.proname as name, pg_get_functiondef(p.oid) as definition
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public' order by 1`,
  );
  return new Map(rows.map((r) => [r.signature, { name: r.name, definition: r.definition }]));
}

async function dropEveryFunction(client: PoolClient): Promise<void> {
  // CASCADE: the trigger messages_live_sessions_only depends on its function (rolled back too).
  for (const signature of (await functionsOf(client)).keys()) await client.query(`DROP FUNCTION ${signature} CASCADE`);
}

/** What is wrong with `dir` as the one source of the migrated database's functions; empty when nothing is. */
async function functionSourceProblems(pool: Pool, dir: string): Promise<string[]> {
  const problems: string[] = [];
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const migrated = await functionsOf(client);
    await dropEveryFunction(client);

    // Each file alone: bodies unchecked, since the functions a file calls are not there.
    for (const source of functionSources(dir)) {
      await client.query('SAVEPOINT one_file');
      await client.query(`SELECT set_config('check_function_bodies', 'off', true)`);
      await client.query(source.sql);
      const defined = [...(await functionsOf(client)).values()].map((f) => f.name).sort();
      if (defined.join() !== source.name) problems.push(`${source.file} defines ${defined.join(', ') || 'nothing'}, not ${source.name} alone`);
      await client.query('ROLLBACK TO SAVEPOINT one_file');
    }

    // All files, as runMigrations applies them.
    await client.query(`SELECT set_config('check_function_bodies', 'on', true)`);
    for (const source of functionSources(dir)) {
      await client.query('SAVEPOINT one_file');
      try {
        await client.query(source.sql);
      } catch (error) {
        problems.push(`${source.file} fails after the files before it: ${(error as Error).message}`);
        await client.query('ROLLBACK TO SAVEPOINT one_file');
      }
    }
    const applied = await functionsOf(client);
    for (const [signature, migratedFunction] of migrated) {
      const fromFiles = applied.get(signature);
      if (!fromFiles) problems.push(`${signature} is in the migrated database but defined by no file`);
      else if (fromFiles.definition !== migratedFunction.definition) problems.push(`${signature} differs from its definition in the migrated database`);
    }
    for (const signature of applied.keys()) if (!migrated.has(signature)) problems.push(`${signature} is defined by a file but not in the migrated database`);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
  return problems;
}

const copies: string[] = [];
afterAll(() => {
  for (const dir of copies) rmSync(dir, { recursive: true, force: true });
});
/** A copy of the functions folder, changed by `change`. */
function changedCopy(change: (dir: string) => void): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'functions-'));
  copies.push(dir);
  cpSync(FUNCTIONS_DIR, dir, { recursive: true });
  change(dir);
  return dir;
}

describe('one source per SQL function', () => {
  it('src/db/functions holds every function of the migrated database, each once, as the database defines it', async () => {
    expect(functionSources().length).toBeGreaterThan(30);
    expect(await functionSourceProblems(stack().db.pool, FUNCTIONS_DIR)).toEqual([]);
  });

  it('finds a function defined in two files', async () => {
    const dir = changedCopy((d) => {
      const invalid = readFileSync(path.join(d, 'sc_invalid.sql'), 'utf8');
      writeFileSync(path.join(d, 'sc_not_found.sql'), `${readFileSync(path.join(d, 'sc_not_found.sql'), 'utf8')}\n${invalid}`);
    });
    expect(await functionSourceProblems(stack().db.pool, dir)).toEqual(['sc_not_found.sql defines sc_invalid, sc_not_found, not sc_not_found alone']);
  });

  it('finds a function that no file defines', async () => {
    const dir = changedCopy((d) => unlinkSync(path.join(d, 'session_ledger.sql')));
    expect(await functionSourceProblems(stack().db.pool, dir)).toEqual(['session_ledger(text) is in the migrated database but defined by no file']);
  });

  it('finds a file whose definition is not the database’s', async () => {
    const dir = changedCopy((d) => {
      const file = path.join(d, 'sc_not_found.sql');
      writeFileSync(file, readFileSync(file, 'utf8').replace('does not exist', 'is unknown'));
    });
    expect(await functionSourceProblems(stack().db.pool, dir)).toEqual(['sc_not_found(text) differs from its definition in the migrated database']);
  });

  it('re-applies the files at every migration run, except on a database a newer release migrated', async () => {
    const pool = stack().db.pool;
    const notFoundBody = async () => (await pool.query<{ src: string }>(`select prosrc as src from pg_proc where proname = 'sc_not_found'`)).rows[0].src;
    const current = await notFoundBody();
    const changedByNewerRelease = current.replace('does not exist', 'is unknown');
    await pool.query(readFileSync(path.join(FUNCTIONS_DIR, 'sc_not_found.sql'), 'utf8').replace('does not exist', 'is unknown'));
    expect(await notFoundBody()).toBe(changedByNewerRelease);
    await runMigrations(stack().db);
    expect(await notFoundBody()).toBe(current);

    await pool.query(readFileSync(path.join(FUNCTIONS_DIR, 'sc_not_found.sql'), 'utf8').replace('does not exist', 'is unknown'));
    await pool.query(`insert into drizzle.__drizzle_migrations (hash, created_at) values ('a newer release', $1)`, [Date.now() + 86_400_000 * 365 * 100]);
    try {
      await runMigrations(stack().db);
      expect(await notFoundBody()).toBe(changedByNewerRelease);
    } finally {
      await pool.query(`delete from drizzle.__drizzle_migrations where hash = 'a newer release'`);
      await runMigrations(stack().db);
    }
    expect(await notFoundBody()).toBe(current);
  });

  it('applies a function after the functions it calls, whatever their names', () => {
    const order = functionSources().map((s) => s.name);
    // sc_estimate_message_tokens is SQL-language: its body is checked against sc_estimate_tokens when created.
    expect(order.indexOf('sc_estimate_tokens')).toBeLessThan(order.indexOf('sc_estimate_message_tokens'));
    expect(order.indexOf('sc_raise')).toBeLessThan(order.indexOf('sc_invalid'));
  });
});
