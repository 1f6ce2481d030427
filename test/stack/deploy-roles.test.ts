/**
 * The production compose file's roles (issue 40 §1; docs/security.md, "Roles"), without Docker:
 * deploy/postgres/roles.sql, as the postgres image's first start runs it (10-roles.sh: psql with
 * the passwords as variables), on a fresh Postgres cluster of this test's own (roles are a
 * cluster's, and the test stack's already has them). Then each component as compose runs it:
 *
 * - `sessions_deploy` (in sc_migrator, no superuser, no CREATEROLE) migrates the empty database:
 *   every migration, the function files, the grants, the migration level;
 * - a real worker as `sessions_worker` starts (it checks the level) and compacts, on the test
 *   stack's Temporal, what an application as `sessions_app` appended; the application reads the
 *   compacted head through the data plane and is refused the tables;
 * - `sessions_inspector` reads, and writes nothing;
 * - `temporal` (Temporal's persistence) creates databases, and reads nothing of the service's.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionsClient } from '../../src/client';
import { PROJECT_ROOT } from '../../src/config';
import { checkSchemaLevel, openDatabase, runMigrations, type DatabaseHandle } from '../../src/db/database';
import { startEmbeddedPostgres } from '../../src/dev/postgres';
import { freePort } from '../../src/dev/temporal-server';
import { agentTurn } from '../support/agent-turn';
import { uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack({ noWorker: true });
const PASSWORDS = {
  deploy_password: 'deploy-pw-1',
  worker_password: 'worker-pw-2',
  inspector_password: 'inspector-pw-3',
  app_password: 'app-pw-4',
  temporal_password: 'temporal-pw-5',
};

/** roles.sql as psql runs it with `-v name=value`: each `:'name'` a quoted literal; meta-commands (`\set`) are psql's own. */
function asPsqlRuns(sql: string): string {
  return sql
    .split('\n')
    .filter((line) => !line.startsWith('\\'))
    .join('\n')
    .replace(/:'([a-z_]+)'/g, (_, name: keyof typeof PASSWORDS) => {
      if (!(name in PASSWORDS)) throw new Error(`roles.sql uses :'${name}', which 10-roles.sh does not set`);
      return `'${PASSWORDS[name]}'`;
    });
}

let dataDir: string;
let postgres: { url: string; stop(): Promise<void> };
const handles: DatabaseHandle[] = [];
const as = (login: string, password: string) => Object.assign(new URL(postgres.url), { username: login, password }).toString();
const open = (url: string) => {
  const handle = openDatabase(url);
  handles.push(handle);
  return handle;
};

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'sc-deploy-roles-'));
  postgres = await startEmbeddedPostgres({ dataDir: path.join(dataDir, 'data'), port: await freePort(), database: 'session_compaction' });
  // 10-roles.sh passes exactly these variables.
  const script = readFileSync(path.join(PROJECT_ROOT, 'deploy/postgres/10-roles.sh'), 'utf8');
  for (const name of Object.keys(PASSWORDS)) expect(script).toContain(`-v ${name}=`);
  const superuser = new Pool({ connectionString: postgres.url, max: 1 });
  await superuser.query(asPsqlRuns(readFileSync(path.join(PROJECT_ROOT, 'deploy/postgres/roles.sql'), 'utf8')));
  await superuser.end();
}, 120_000);

afterAll(async () => {
  for (const handle of handles) await handle.close();
  await postgres?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe("the compose file's roles, on a fresh cluster", () => {
  it('lets sessions_deploy migrate an empty database without superuser or CREATEROLE, leaving sc_owner the owner', async () => {
    const deploy = open(as('sessions_deploy', PASSWORDS.deploy_password));
    const { rows: attributes } = await deploy.pool.query('SELECT rolsuper, rolcreaterole FROM pg_roles WHERE rolname = current_user');
    expect(attributes).toEqual([{ rolsuper: false, rolcreaterole: false }]);
    await runMigrations(deploy);
    const { rows: owners } = await deploy.pool.query<{ owner: string }>(
      `SELECT DISTINCT pg_get_userbyid(c.relowner) AS owner FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'S')
       UNION SELECT DISTINCT pg_get_userbyid(p.proowner) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'`,
    );
    expect(owners).toEqual([{ owner: 'sc_owner' }]);
    expect(await checkSchemaLevel(open(as('sessions_worker', PASSWORDS.worker_password)))).toBe('current');
  });

  it('runs a worker as sessions_worker that compacts what sessions_app appended; the application reaches the data plane only', async () => {
    const taskQueue = uniqueId('deploy-roles');
    const config = { ...stack().config, temporal: { ...stack().config.temporal, taskQueue } };
    const workerDatabase = open(as('sessions_worker', PASSWORDS.worker_password));
    await stack().startWorker({ config: { ...config, databaseUrl: as('sessions_worker', PASSWORDS.worker_password) }, database: workerDatabase });
    const appDatabase = open(as('sessions_app', PASSWORDS.app_password));
    const app = await SessionsClient.connect({ config, database: appDatabase });
    try {
      const id = uniqueId('compose');
      await app.createSession({ sessionId: id, source: 'orders' });
      const turns = [...agentTurn(1), ...agentTurn(2), ...agentTurn(3), ...agentTurn(4)];
      await app.append(id, turns);
      const compacted = await app.compact(id, { force: true });
      expect(compacted).toMatchObject({ outcome: 'compacted', generation: 1 });
      expect((await app.transcript(id)).messages.length).toBeLessThan(turns.length);
      await expect(appDatabase.pool.query('SELECT * FROM messages LIMIT 1')).rejects.toMatchObject({ code: '42501' });
    } finally {
      await app.close();
      await stack().stopWorker();
    }
  });

  it('lets sessions_inspector read and write nothing, and temporal create its databases but read nothing of the service', async () => {
    const inspector = new Pool({ connectionString: as('sessions_inspector', PASSWORDS.inspector_password), max: 1 });
    const temporal = new Pool({ connectionString: as('temporal', PASSWORDS.temporal_password), max: 1 });
    // This cluster stops in afterAll: a connection still closing then hears it (57P01), harmlessly.
    for (const pool of [inspector, temporal]) pool.on('error', () => undefined);
    try {
      expect((await inspector.query('SELECT count(*)::int AS n FROM lineages')).rows[0].n).toBeGreaterThan(0);
      await expect(inspector.query("UPDATE lineages SET source = 'x'")).rejects.toMatchObject({ code: '42501' });
      const database = `temporal_${uniqueId('db').replaceAll('-', '_')}`;
      await temporal.query(`CREATE DATABASE ${database}`);
      await temporal.query(`DROP DATABASE ${database}`);
      await expect(temporal.query('SELECT 1 FROM lineages LIMIT 1')).rejects.toMatchObject({ code: '42501' });
      await expect(temporal.query("SELECT session_create('from-temporal')")).rejects.toMatchObject({ code: '42501' });
    } finally {
      await inspector.end();
      await temporal.end();
    }
  });
});
