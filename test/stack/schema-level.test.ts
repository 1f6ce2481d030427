/**
 * The worker runs no DDL at start (issue 40 §1): `npm run db:migrate` (runMigrations) records
 * the migration level in schema_level, and a worker checks it, refusing with SchemaBehindError
 * when the database is behind its release (older migrations, other function files, never
 * migrated), and writing nothing. A database a newer release migrated is accepted (a rollout).
 * MIGRATE_ON_START=true is the opt-in for a single-process setup: that worker migrates first.
 * The stack itself runs its workers under a login in sc_worker (no DDL) and its clients under
 * one in sc_app and sc_reader (no table writes), which every other stack test then relies on.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config';
import { MIGRATIONS_DIR, SchemaBehindError, functionsDigest, runMigrations } from '../../src/db/database';
import { uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack({ noWorker: true });

const journalWhens = (): number[] =>
  (JSON.parse(readFileSync(path.join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8')) as { entries: Array<{ when: number }> }).entries.map((e) => e.when);

async function level() {
  const rows = await stack().db.pool.query<{ migrated_to: string; functions_digest: string; applied_at: Date }>(
    'select migrated_to, functions_digest, applied_at from schema_level',
  );
  return rows.rows.map((r) => ({ migratedTo: Number(r.migrated_to), digest: r.functions_digest, appliedAt: r.applied_at.toISOString() }));
}

/** Starts a worker, and stops it again: resolves once it started, rejects with what refused it. */
async function startAndStop(env: Record<string, string> = {}): Promise<void> {
  await stack().startWorker({ config: loadConfig({ ...stack().env, ...env }) });
  await stack().stopWorker();
}

describe('the migration level a worker checks at start', () => {
  it('runMigrations records this release’s level, and a worker starts on it', async () => {
    expect(await level()).toEqual([{ migratedTo: Math.max(...journalWhens()), digest: functionsDigest(), appliedAt: expect.any(String) }]);
    await startAndStop();
  });

  it('refuses to start on function files older than its own, and writes nothing', async () => {
    await stack().db.pool.query(`update schema_level set functions_digest = 'an older release'`);
    const before = await level();
    const refusal = await startAndStop().catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(SchemaBehindError);
    expect(String((refusal as Error).message)).toMatch(/SQL functions are not this release.*npm run db:migrate/);
    expect(await level()).toEqual(before);
    await runMigrations(stack().db);
    expect((await level())[0].digest).toBe(functionsDigest());
    await startAndStop();
  });

  it('refuses to start on a database whose migrations are behind', async () => {
    const whens = journalWhens();
    await stack().db.pool.query(`update schema_level set migrated_to = $1`, [whens[whens.length - 2]]);
    const refusal = await startAndStop().catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(SchemaBehindError);
    expect(String((refusal as Error).message)).toContain(`this release's newest migration is of ${new Date(Math.max(...whens)).toISOString()}`);
    await runMigrations(stack().db);
    await startAndStop();
  });

  it('refuses to start on a database migrated before the level was recorded (no schema_level), and db:migrate brings it up', async () => {
    const last = Math.max(...journalWhens());
    // The database as a release before 0026 left it: 0026 and what follows it not applied (0027 may apply again).
    const schemaLevelWhen = journalWhens()[26]; // 0026_schema_level
    await stack().db.pool.query(`delete from drizzle.__drizzle_migrations where created_at >= $1`, [schemaLevelWhen]);
    await stack().db.pool.query('drop table schema_level');
    const refusal = await startAndStop().catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(SchemaBehindError);
    expect(String((refusal as Error).message)).toContain('no migration level recorded');
    expect((await stack().db.pool.query(`select to_regclass('public.schema_level') as t`)).rows[0].t).toBeNull();
    await runMigrations(stack().db);
    expect(await level()).toEqual([{ migratedTo: last, digest: functionsDigest(), appliedAt: expect.any(String) }]);
    await startAndStop();
  });

  it('runs on a database a newer release migrated (a rollout), whatever its function files', async () => {
    await stack().db.pool.query(`update schema_level set migrated_to = $1, functions_digest = 'a newer release'`, [Date.now() + 86_400_000 * 365 * 100]);
    try {
      await startAndStop();
    } finally {
      await runMigrations(stack().db);
    }
  });

  it('with MIGRATE_ON_START=true migrates first, then starts (its login a migrator: here the superuser)', async () => {
    await stack().db.pool.query(`update schema_level set functions_digest = 'an older release'`);
    await stack().startWorker({ config: loadConfig({ ...stack().env, MIGRATE_ON_START: 'true' }), database: stack().db });
    await stack().stopWorker();
    expect((await level())[0].digest).toBe(functionsDigest());
  });

  it('the stack’s workers run under a login in sc_worker, which may not migrate: MIGRATE_ON_START=true fails 42501 and changes nothing', async () => {
    const login = await stack().db.pool.query<{ member: boolean; migrator: boolean; superuser: boolean }>(
      `select pg_has_role(rolname, 'sc_worker', 'MEMBER') as member, pg_has_role(rolname, 'sc_migrator', 'MEMBER') as migrator, rolsuper as superuser
         from pg_roles where rolname = $1`,
      [new URL(stack().workerDatabaseUrl).username],
    );
    expect(login.rows).toEqual([{ member: true, migrator: false, superuser: false }]);
    await stack().db.pool.query(`update schema_level set functions_digest = 'an older release'`);
    const before = await level();
    // The stack's own worker database (the worker login): no DDL.
    const refusal = await startAndStop({ MIGRATE_ON_START: 'true' }).catch((error: unknown) => error);
    expect((refusal as { code?: string }).code ?? (refusal as { cause?: { code?: string } }).cause?.code).toBe('42501');
    expect(await level()).toEqual(before);
    await runMigrations(stack().db);
  });
});

describe('the stack’s client login', () => {
  it('the stack’s clients run under a login in sc_app alone, which may not read or write a table', async () => {
    const login = await stack().clientDb.pool.query<{ user: string; app: boolean; reader: boolean; worker: boolean; superuser: boolean }>(
      `select current_user as user, pg_has_role('sc_app', 'MEMBER') as app, pg_has_role('sc_reader', 'MEMBER') as reader,
              pg_has_role('sc_worker', 'MEMBER') as worker, (select rolsuper from pg_roles where rolname = current_user) as superuser`,
    );
    expect(login.rows).toEqual([{ user: 'sc_stack_app', app: true, reader: false, worker: false, superuser: false }]);
    const write = await stack()
      .clientDb.pool.query(`update lineages set closed_at = now()`)
      .then(() => 'ok')
      .catch((error: { code?: string }) => error.code);
    expect(write).toBe('42501');
    const read = await stack()
      .clientDb.pool.query(`select id from lineages limit 1`)
      .then(() => 'ok')
      .catch((error: { code?: string }) => error.code);
    expect(read).toBe('42501');
    // The stack's SessionsClient works through it: its calls arrive on the application login.
    const sessionId = uniqueId('app-login');
    await stack().client.createSession({ sessionId });
    const sessions = await stack().db.pool.query<{ usename: string }>(
      `select distinct usename from pg_stat_activity where datname = current_database() and query like '%session_create(%' and pid <> pg_backend_pid()`,
    );
    expect(sessions.rows).toEqual([{ usename: 'sc_stack_app' }]);
    expect((await stack().db.pool.query('select count(*)::int as n from lineages where id = $1', [sessionId])).rows[0].n).toBe(1);
  });
});
