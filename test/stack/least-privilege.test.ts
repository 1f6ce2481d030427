/**
 * Least privilege (issue 40 §1 and §5; docs/security.md, "Roles"), on the real stack. The roles
 * of src/db/migrations/0025_roles.sql, with the privileges sc_apply_grants() gives them on the
 * migrated database; the test logs in as login roles of its own, members of one role each:
 *
 * - as sc_app: SELECT, INSERT, UPDATE, DELETE and TRUNCATE on every table of the schema, and
 *   nextval on every sequence, are refused with 42501 (insufficient_privilege); so is calling a
 *   function that is not the data plane's (the worker's commit, retention, the helpers);
 * - as sc_app, the SessionsClient's agent path works through the data-plane functions alone:
 *   create, a keyed append of a turn with parallel tool calls and JSON outputs, the batch read
 *   back by its key, the head, a forced compaction through the worker (the worker runs as the
 *   stack's own role), the compacted head, close, an append refused once closed, and erase;
 * - as sc_app, the operator's reads work through their read functions alone (session_list_lineages,
 *   session_history, session_compaction_detail, session_audit), with typed errors for bad input,
 *   while a direct SELECT of the tables they read stays refused;
 * - as sc_reader: every write is refused with 42501 (tables and the writing functions), while
 *   the reads it is for answer;
 * - a login role in no group calls no function at all (EXECUTE is revoked from PUBLIC);
 * - the data-plane functions run as their owner with `search_path` pinned to
 *   `pg_catalog, public, pg_temp`: a temporary table the caller creates cannot stand in for a
 *   table of the schema (Postgres searches pg_temp first for tables unless it is named last).
 */
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionsClient } from '../../src/client';
import { openDatabase, type DatabaseHandle } from '../../src/db/database';
import { LineageClosedError } from '../../src/errors';
import { agentTurn } from '../support/agent-turn';
import { uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();

interface Login {
  name: string;
  url: string;
  pool: Pool;
}

const logins: Login[] = [];

/** A login role of this test (roles are the cluster's: a unique name, dropped afterwards), a member of `group` when given. */
async function createLogin(group: 'sc_app' | 'sc_reader' | 'sc_worker' | null): Promise<Login> {
  const name = `sc_test_${group ?? 'nobody'}_${randomUUID().slice(0, 8)}`;
  const password = randomUUID();
  await stack().db.pool.query(`CREATE ROLE ${name} LOGIN PASSWORD '${password}'${group ? ` IN ROLE ${group}` : ''}`);
  const url = new URL(stack().env.DATABASE_URL);
  url.username = name;
  url.password = password;
  const login = { name, url: url.toString(), pool: new Pool({ connectionString: url.toString(), max: 2 }) };
  logins.push(login);
  return login;
}

/** The SQLSTATE a statement fails with, or 'ok' when it succeeds. */
async function outcomeOf(pool: Pool, text: string, values: unknown[] = []): Promise<string> {
  try {
    await pool.query(text, values);
    return 'ok';
  } catch (error) {
    return String((error as { code?: unknown }).code);
  }
}

/** The schema's tables, each with one of its columns, read as the stack's own role. */
async function tables(): Promise<Array<{ table: string; column: string }>> {
  const { rows } = await stack().db.pool.query<{ table: string; column: string }>(
    `select c.relname as table, (select a.attname from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped order by a.attnum limit 1) as column
       from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' and c.relkind in ('r', 'p') order by 1`,
  );
  return rows;
}

/** Every write to every table, by statement, with the SQLSTATE it got. */
async function tableWrites(pool: Pool): Promise<Record<string, string>> {
  const outcomes: Record<string, string> = {};
  for (const { table, column } of await tables()) {
    outcomes[`INSERT ${table}`] = await outcomeOf(pool, `INSERT INTO ${table} DEFAULT VALUES`);
    outcomes[`UPDATE ${table}`] = await outcomeOf(pool, `UPDATE ${table} SET ${column} = DEFAULT WHERE false`);
    outcomes[`DELETE ${table}`] = await outcomeOf(pool, `DELETE FROM ${table} WHERE false`);
    outcomes[`TRUNCATE ${table}`] = await outcomeOf(pool, `TRUNCATE ${table}`);
  }
  return outcomes;
}

const refusedAll = (outcomes: Record<string, string>) => Object.fromEntries(Object.keys(outcomes).map((key) => [key, '42501']));

let app: Login;
let reader: Login;
let worker: Login;
let nobody: Login;
let appDatabase: DatabaseHandle;
let appClient: SessionsClient;

beforeAll(async () => {
  app = await createLogin('sc_app');
  reader = await createLogin('sc_reader');
  worker = await createLogin('sc_worker');
  nobody = await createLogin(null);
  appDatabase = openDatabase(app.url, { max: 4 });
  appClient = await SessionsClient.connect({ config: stack().config, database: appDatabase });
});

afterAll(async () => {
  await appClient?.close();
  await appDatabase?.close();
  for (const login of logins) {
    await login.pool.end();
    await stack().db.pool.query(`DROP ROLE IF EXISTS ${login.name}`);
  }
});

describe('the application role (sc_app)', () => {
  it('is refused SELECT, INSERT, UPDATE, DELETE and TRUNCATE on every table, and every sequence', async () => {
    const schemaTables = await tables();
    expect(schemaTables.map((t) => t.table)).toEqual(expect.arrayContaining(['lineages', 'sessions', 'messages', 'compactions', 'compaction_events']));
    const reads: Record<string, string> = {};
    for (const { table } of schemaTables) reads[`SELECT ${table}`] = await outcomeOf(app.pool, `SELECT * FROM ${table} LIMIT 1`);
    expect(reads).toEqual(refusedAll(reads));
    const writes = await tableWrites(app.pool);
    expect(writes).toEqual(refusedAll(writes));
    const { rows: sequences } = await stack().db.pool.query<{ name: string }>(
      `select c.oid::regclass::text as name from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' and c.relkind = 'S'`,
    );
    expect(sequences.length).toBeGreaterThan(0);
    const nextvals: Record<string, string> = {};
    for (const { name } of sequences) nextvals[`nextval ${name}`] = await outcomeOf(app.pool, `SELECT nextval('${name}')`);
    expect(nextvals).toEqual(refusedAll(nextvals));
  });

  it('calls no function but the data plane’s', async () => {
    const calls = {
      commit: await outcomeOf(app.pool, `SELECT sc_compaction_commit('{}'::jsonb)`),
      begin: await outcomeOf(app.pool, `SELECT sc_compaction_begin('{}'::jsonb)`),
      retention: await outcomeOf(app.pool, `SELECT retention_prune('{}'::jsonb, 1, false)`),
      raise: await outcomeOf(app.pool, `SELECT sc_raise('SessionNotFoundError', 'x', '{}'::jsonb)`),
      grants: await outcomeOf(app.pool, `SELECT sc_apply_grants()`),
    };
    expect(calls).toEqual({ commit: '42501', begin: '42501', retention: '42501', raise: '42501', grants: '42501' });
    // Every function it may call is a session_* function of the data plane.
    const { rows } = await stack().db.pool.query<{ name: string }>(
      `select distinct p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = 'public' and has_function_privilege($1, p.oid, 'EXECUTE') order by 1`,
      [app.name],
    );
    expect(rows.map((r) => r.name)).toEqual([
      'session_append',
      'session_appended_under',
      'session_audit',
      'session_close',
      'session_compaction_detail',
      'session_compaction_events',
      'session_create',
      'session_erase',
      'session_history',
      'session_ledger',
      'session_lineage',
      'session_lineage_state',
      'session_list_lineages',
      'session_messages',
      'session_recorded_answer',
      'session_release_auto_compaction',
      'session_replace_tail',
      'session_transcript',
    ]);
  });

  it('runs the agent path through the data plane: create, append, read, a forced compaction by the worker, close, erase', async () => {
    const id = uniqueId('least-privilege');
    await appClient.createSession({ sessionId: id, source: 'service-a' });
    const turns = [...agentTurn(1), ...agentTurn(2), ...agentTurn(3), ...agentTurn(4)];
    await appClient.append(id, [{ role: 'system', content: 'You are a careful coding agent.' }, ...turns.slice(0, 10)], { appendKey: 'turn-1-2' });
    await appClient.append(id, turns.slice(10), { appendKey: 'turn-3-4' });
    expect(await appClient.appendedUnder(id, 'turn-3-4')).toEqual(turns.slice(10));
    expect((await appClient.transcript(id)).messages).toHaveLength(21);

    const compacted = await appClient.compact(id, { force: true });
    expect(compacted).toMatchObject({ outcome: 'compacted', generation: 1 });
    const head = await appClient.transcript(id);
    expect(head.sessionId).toBe(compacted.sessionId);
    expect(compacted.messages).toEqual(head.messages);
    expect(head.messages.length).toBeLessThan(21);
    expect((await appClient.lineage(id)).sessions.map((s) => s.sessionId)).toEqual([id, compacted.sessionId]);

    await appClient.closeSession(id);
    await expect(appClient.append(id, agentTurn(5))).rejects.toBeInstanceOf(LineageClosedError);
    // The workflow (the worker's role) closed it; erasing it is the application's.
    expect(await appClient.deleteLineage(id)).toMatchObject({ lineageId: id, sessions: 2 });
    expect(await outcomeOf(stack().db.pool, 'SELECT 1 FROM lineages WHERE id = $1', [id])).toBe('ok');
    expect((await stack().db.pool.query('SELECT 1 FROM lineages WHERE id = $1', [id])).rowCount).toBe(0);
  });

  it('reads as the operator through the read functions alone: list, history, one compaction, audit; the tables stay closed', async () => {
    const id = uniqueId('least-privilege-operator');
    await appClient.createSession({ sessionId: id, source: 'service-ops' });
    await appClient.append(id, [{ role: 'system', content: 'You are a careful coding agent.' }, ...agentTurn(1), ...agentTurn(2), ...agentTurn(3)]);
    const compacted = await appClient.compact(id, { force: true });
    expect(compacted).toMatchObject({ outcome: 'compacted', generation: 1 });
    const operator = appClient.operator;

    const page = await operator.listLineages({ search: id, limit: 5 });
    expect(page).toEqual({
      lineages: [
        expect.objectContaining({
          lineageId: id,
          headSessionId: compacted.sessionId,
          source: 'service-ops',
          generation: 1,
          closed: false,
          lastOutcome: 'compacted',
        }),
      ],
      next: null,
    });
    const history = await operator.history(compacted.sessionId);
    expect(history.lineage).toMatchObject({ lineageId: id, headSessionId: compacted.sessionId, closed: false });
    expect(history.sessions.map((s) => [s.sessionId, s.messageCount > 0])).toEqual([
      [id, true],
      [compacted.sessionId, true],
    ]);
    expect(history.compactions).toHaveLength(1);
    const detail = await operator.compaction(history.compactions[0].id);
    expect(detail.compaction).toMatchObject({ id: history.compactions[0].id, parentSessionId: id, childSessionId: compacted.sessionId, outcome: 'compacted' });
    expect(detail.parent).toHaveLength(16);
    expect(detail.result.map((r) => r.message)).toEqual(compacted.messages);
    expect(await operator.auditLineage(compacted.sessionId)).toMatchObject({
      lineageId: id,
      sessions: 2,
      lineages: 1,
      compactions: 1,
      forks: 0,
      lostMessages: 0,
    });
    expect(await operator.audit()).toMatchObject({ forks: 0, orphans: 0, lostMessages: 0, duplicatedMessages: 0, sequenceGaps: 0 });

    // The list's filters and keyset paging, in SQL: three lineages of one service, one of them closed.
    const prefix = uniqueId('lp-page');
    for (const suffix of ['a', 'b', 'c']) await appClient.createSession({ sessionId: `${prefix}-${suffix}`, source: 'service-ops' });
    await appClient.closeSession(`${prefix}-b`);
    const ids = (page: { lineages: Array<{ lineageId: string }> }) => page.lineages.map((l) => l.lineageId);
    const first = await operator.listLineages({ search: prefix, limit: 2 });
    expect([ids(first), first.next]).toEqual([[`${prefix}-a`, `${prefix}-b`], `${prefix}-b`]);
    const second = await operator.listLineages({ search: prefix, limit: 2, after: first.next! });
    expect([ids(second), second.next]).toEqual([[`${prefix}-c`], null]);
    expect(ids(await operator.listLineages({ search: prefix, status: 'closed' }))).toEqual([`${prefix}-b`]);
    expect(ids(await operator.listLineages({ search: prefix.toUpperCase(), status: 'live', lastOutcome: 'none', source: 'service-ops' }))).toEqual([
      `${prefix}-a`,
      `${prefix}-c`,
    ]);
    // The search is a substring, not a pattern: `_` matches only an underscore.
    expect(ids(await operator.listLineages({ search: prefix.replace(/-/g, '_') }))).toEqual([]);

    // Bad input and unknown ids: the typed errors (SQLSTATE SC400, SC404), and null for an unknown compaction.
    expect({
      limit: await outcomeOf(app.pool, `SELECT session_list_lineages(NULL, NULL, NULL, NULL, NULL, 201)`),
      status: await outcomeOf(app.pool, `SELECT session_list_lineages(NULL, NULL, 'open', NULL, NULL, 10)`),
      history: await outcomeOf(app.pool, `SELECT session_history($1)`, [uniqueId('no-such-session')]),
      audit: await outcomeOf(app.pool, `SELECT session_audit($1)`, [uniqueId('no-such-session')]),
      compactionId: await outcomeOf(app.pool, `SELECT session_compaction_detail('')`),
    }).toEqual({ limit: 'SC400', status: 'SC400', history: 'SC404', audit: 'SC404', compactionId: 'SC400' });
    expect((await app.pool.query(`SELECT session_compaction_detail('no-such-job') AS result`)).rows).toEqual([{ result: null }]);

    // What the functions read, the login still cannot.
    expect({
      lineages: await outcomeOf(app.pool, 'SELECT id FROM lineages WHERE id = $1', [id]),
      compactions: await outcomeOf(app.pool, 'SELECT id FROM compactions WHERE lineage_id = $1', [id]),
      messages: await outcomeOf(app.pool, 'SELECT body FROM messages WHERE session_id = $1', [id]),
    }).toEqual({ lineages: '42501', compactions: '42501', messages: '42501' });
  });

  it('reads the schema’s tables, never a temporary table of its own, inside the functions (search_path pinned, pg_temp last)', async () => {
    const id = uniqueId('least-privilege-temp');
    await appClient.createSession({ sessionId: id });
    await appClient.append(id, agentTurn(1));
    const client = await app.pool.connect();
    try {
      // An empty `sessions` of the caller's own: a function that searched pg_temp first would find no session.
      await client.query('CREATE TEMPORARY TABLE sessions (id text, lineage_id text)');
      await client.query('GRANT ALL ON pg_temp.sessions TO PUBLIC');
      const { rows } = await client.query<{ result: { messages: unknown[] } }>('SELECT session_transcript($1) AS result', [id]);
      expect(rows[0].result.messages).toEqual(agentTurn(1));
    } finally {
      await client.query('DISCARD TEMP');
      client.release();
    }
  });
});

describe('the reader role (sc_reader)', () => {
  it('writes nothing: every table write and every writing function is refused', async () => {
    const writes = await tableWrites(reader.pool);
    expect(writes).toEqual(refusedAll(writes));
    const id = uniqueId('least-privilege-read');
    await appClient.createSession({ sessionId: id });
    await appClient.append(id, agentTurn(1));
    const calls = {
      create: await outcomeOf(reader.pool, `SELECT session_create($1)`, [uniqueId('reader-create')]),
      append: await outcomeOf(reader.pool, `SELECT session_append($1, $2::jsonb)`, [id, JSON.stringify(agentTurn(2))]),
      replaceTail: await outcomeOf(reader.pool, `SELECT session_replace_tail($1, 1, NULL, '[]'::jsonb, NULL, NULL, NULL)`, [id]),
      close: await outcomeOf(reader.pool, `SELECT session_close($1)`, [id]),
      erase: await outcomeOf(reader.pool, `SELECT session_erase($1, true)`, [id]),
      release: await outcomeOf(reader.pool, `SELECT session_release_auto_compaction($1, 'r')`, [id]),
      retention: await outcomeOf(reader.pool, `SELECT retention_prune('{}'::jsonb, 1, false)`),
    };
    expect(calls).toEqual({
      create: '42501',
      append: '42501',
      replaceTail: '42501',
      close: '42501',
      erase: '42501',
      release: '42501',
      retention: '42501',
    });
    // Nothing changed, and what it is for it does: the head and the tables, read.
    const { rows } = await reader.pool.query<{ result: { messages: unknown[] } }>('SELECT session_transcript($1) AS result', [id]);
    expect(rows[0].result.messages).toEqual(agentTurn(1));
    expect((await reader.pool.query('SELECT id, closed_at FROM lineages WHERE id = $1', [id])).rows).toEqual([{ id, closed_at: null }]);
  });
});

describe('the worker role (sc_worker)', () => {
  it('touches no table but reading the migration level, and calls only its own functions and the data plane', async () => {
    const reads: Record<string, string> = {};
    for (const { table } of await tables()) reads[`SELECT ${table}`] = await outcomeOf(worker.pool, `SELECT * FROM ${table} LIMIT 1`);
    expect(reads).toEqual({ ...refusedAll(reads), 'SELECT schema_level': 'ok' });
    const writes = await tableWrites(worker.pool);
    expect(writes).toEqual(refusedAll(writes));
    const calls = {
      raise: await outcomeOf(worker.pool, `SELECT sc_raise('SessionNotFoundError', 'x', '{}'::jsonb)`),
      grants: await outcomeOf(worker.pool, `SELECT sc_apply_grants()`),
      tenant: await outcomeOf(worker.pool, `SELECT sc_tenant_id('x')`),
    };
    expect(calls).toEqual({ raise: '42501', grants: '42501', tenant: '42501' });
    const { rows } = await stack().db.pool.query<{ name: string }>(
      `select distinct p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = 'public' and has_function_privilege('sc_worker', p.oid, 'EXECUTE') and p.proname not like 'session\\_%' order by 1`,
    );
    expect(rows.map((r) => r.name)).toEqual([
      'retention_prune',
      'sc_compaction_begin',
      'sc_compaction_commit',
      'sc_compaction_lock',
      'sc_job_abort',
      'sc_job_finish',
      'sc_job_record_joined',
      'sc_settle_auto_compaction',
    ]);
    // Each of them runs as the schema's owner, with the path pinned: the worker's calls need no table.
    const { rows: invokers } = await stack().db.pool.query<{ name: string }>(
      `select p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = 'public' and has_function_privilege('sc_worker', p.oid, 'EXECUTE')
          and not (p.prosecdef and array_to_string(p.proconfig, ',') like 'search_path=pg_catalog, public, pg_temp%')`,
    );
    expect(invokers).toEqual([]);
  });
});

describe('the stack’s own logins', () => {
  it('run the clients in sc_app alone and the inspector in sc_reader alone, so every stack test proves those grants suffice', async () => {
    const { rows } = await stack().db.pool.query<{ login: string; groups: string[] }>(
      `select r.rolname as login, coalesce(array_agg(g.rolname::text order by g.rolname) filter (where g.rolname is not null), '{}'::text[]) as groups
         from pg_roles r left join pg_auth_members m on m.member = r.oid left join pg_roles g on g.oid = m.roleid
        where r.rolname in ('sc_stack_app', 'sc_stack_reader', 'sc_stack_worker') group by r.rolname order by 1`,
    );
    expect(rows).toEqual([
      { login: 'sc_stack_app', groups: ['sc_app'] },
      { login: 'sc_stack_reader', groups: ['sc_reader'] },
      { login: 'sc_stack_worker', groups: ['sc_worker'] },
    ]);
    expect(new URL(stack().appDatabaseUrl).username).toBe('sc_stack_app');
    expect(new URL(stack().readerDatabaseUrl).username).toBe('sc_stack_reader');
    expect((await stack().clientDb.pool.query<{ user: string }>('select current_user as user')).rows).toEqual([{ user: 'sc_stack_app' }]);
  });
});

describe('a login role in no group', () => {
  it('calls no function: EXECUTE is revoked from PUBLIC', async () => {
    const id = uniqueId('least-privilege-public');
    expect({
      create: await outcomeOf(nobody.pool, `SELECT session_create($1)`, [id]),
      transcript: await outcomeOf(nobody.pool, `SELECT session_transcript($1)`, [id]),
      select: await outcomeOf(nobody.pool, `SELECT * FROM messages LIMIT 1`),
    }).toEqual({ create: '42501', transcript: '42501', select: '42501' });
  });
});
