/**
 * Tenants (issue 40 §2 and §5; docs/security.md, "Tenants"), on the real stack: two
 * applications, each a login of its own in sc_app mapped to a tenant in `tenant_logins`
 * (migration 0027), and a reader login mapped to one of them.
 *
 * - both create `chat-42`: neither is refused or told about the other (no conflict oracle), and
 *   each lineage is stored under its tenant's prefix (`acme:chat-42`, `beta:chat-42`);
 * - every data-plane function, called by one tenant with the other tenant's stored name,
 *   answers exactly as it answers for a name that never existed, and the other tenant's
 *   lineage is untouched after the writing ones (append, replace, close, erase among them);
 * - both compact `chat-42` at once through the one worker (a login with no tenant): two
 *   workflows, `session-lineage/acme:chat-42` and `session-lineage/beta:chat-42`, and each head
 *   holds its own tenant's words only;
 * - row-level security is the second line: a function that reads the tables as their owner with
 *   no tenant check of its own, and the tenant reader's own SELECTs, see the tenant's rows only;
 *   the mapping itself is readable by no tenant;
 * - the operator's reads (list, history, audit) through a tenant's login show its own lineages;
 * - once tenants are on, an application login with no tenant is refused.
 */
import { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionsClient } from '../../src/client';
import { openDatabase, type DatabaseHandle } from '../../src/db/database';
import { agentTurn } from '../support/agent-turn';
import { createTenantLogin, dropTenantLogin, type TenantLogin } from '../support/tenant-logins';
import { uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();

interface Tenant extends TenantLogin {
  database?: DatabaseHandle;
  client?: SessionsClient;
}

const created: Tenant[] = [];

/** A login of this test in `group`, mapped to `tenant`, with a SessionsClient of its own when `withClient`. */
async function createTenant(group: 'sc_app' | 'sc_reader' | 'sc_worker', tenant: string, withClient: boolean): Promise<Tenant> {
  const result: Tenant = await createTenantLogin(stack().db.pool, stack().env.DATABASE_URL, group, tenant);
  if (withClient) {
    result.database = openDatabase(result.url);
    result.client = await SessionsClient.connect({ config: stack().config, database: result.database });
  }
  created.push(result);
  return result;
}

/** What a statement answers: its result, or its SQLSTATE and message with `id` written as `<id>`. */
async function answerOf(pool: Pool, text: string, id: string, values: unknown[] = []): Promise<unknown> {
  try {
    const { rows } = await pool.query(text, [id, ...values]);
    return { ok: JSON.stringify(rows).replaceAll(id, '<id>') };
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    return { code, message: message.replaceAll(id, '<id>') };
  }
}

/** Every data-plane function that names a lineage, called with the id as $1. */
const DATA_PLANE_CALLS: Record<string, { sql: string; values?: unknown[] }> = {
  transcript: { sql: 'SELECT session_transcript($1)' },
  transcriptArchived: { sql: 'SELECT session_transcript($1, true)' },
  lineage: { sql: 'SELECT session_lineage($1)' },
  lineageState: { sql: 'SELECT session_lineage_state($1)' },
  messages: { sql: 'SELECT session_messages($1)' },
  appendedUnder: { sql: "SELECT session_appended_under($1, 'turn-1')" },
  ledger: { sql: 'SELECT session_ledger($1)' },
  compactionEvents: { sql: 'SELECT session_compaction_events($1, NULL, 10)' },
  recordedAnswer: { sql: "SELECT session_recorded_answer($1, 'request-1')" },
  releaseAutoCompaction: { sql: "SELECT session_release_auto_compaction($1, 'request-1')" },
  append: { sql: 'SELECT session_append($1, $2::jsonb)', values: [JSON.stringify(agentTurn(9))] },
  replaceTail: { sql: "SELECT session_replace_tail($1, 1, NULL, '[]'::jsonb, NULL, NULL, NULL)" },
  close: { sql: 'SELECT session_close($1)' },
  erase: { sql: 'SELECT session_erase($1, true)' },
  history: { sql: 'SELECT session_history($1)' },
  audit: { sql: 'SELECT session_audit($1)' },
};

const turnsOf = (tenant: string) => [
  { role: 'user', content: `[tenant ${tenant}] Keep every change behind a feature flag.` },
  ...agentTurn(1),
  ...agentTurn(2),
  ...agentTurn(3),
];

let acme: Tenant;
let beta: Tenant;
let acmeReader: Tenant;

beforeAll(async () => {
  acme = await createTenant('sc_app', 'acme', true);
  beta = await createTenant('sc_app', 'beta', true);
  acmeReader = await createTenant('sc_reader', 'acme', false);
});

afterAll(async () => {
  for (const tenant of created) {
    await tenant.client?.close();
    await tenant.database?.close();
    await dropTenantLogin(stack().db.pool, tenant);
  }
});

describe('tenants', () => {
  it("refuses a tenant's empty id as every login's, not as the name of its prefix", async () => {
    await expect(acme.pool.query("SELECT session_create('')")).rejects.toMatchObject({ code: 'SC400' });
    expect((await stack().db.pool.query("SELECT count(*)::int AS n FROM lineages WHERE id = 'acme:'")).rows[0].n).toBe(0);
  });

  it('gives each tenant its own chat-42: no conflict, no word about the other, stored under its prefix', async () => {
    const a = await acme.client!.createSession({ sessionId: 'chat-42', source: 'service-a' });
    const b = await beta.client!.createSession({ sessionId: 'chat-42', source: 'service-b' });
    expect([a.lineageId, b.lineageId]).toEqual(['acme:chat-42', 'beta:chat-42']);
    await acme.client!.append('chat-42', turnsOf('acme'), { appendKey: 'turn-1' });
    await beta.client!.append('chat-42', turnsOf('beta'), { appendKey: 'turn-1' });

    // A conflicting create describes the caller's own lineage only.
    await expect(beta.client!.createSession({ sessionId: 'chat-42', source: 'service-c' })).rejects.toThrow(/already exists with source "service-b"/);
    expect((await acme.client!.transcript('chat-42')).messages).toEqual(turnsOf('acme'));
    expect((await beta.client!.transcript('chat-42')).messages).toEqual(turnsOf('beta'));
    // The name the data plane answered with may be passed back.
    expect((await acme.client!.transcript('acme:chat-42')).messages).toEqual(turnsOf('acme'));
    const { rows } = await stack().db.pool.query<{ id: string; source: string }>("SELECT id, source FROM lineages WHERE id LIKE '%chat-42' ORDER BY id");
    expect(rows).toEqual([
      { id: 'acme:chat-42', source: 'service-a' },
      { id: 'beta:chat-42', source: 'service-b' },
    ]);
  });

  it("answers another tenant's lineage, through every data-plane function, as if it did not exist, and leaves it untouched", async () => {
    const id = uniqueId('orders');
    await beta.client!.createSession({ sessionId: id, source: 'service-b' });
    await beta.client!.append(id, turnsOf('beta'), { appendKey: 'turn-1' });
    const foreign = `beta:${id}`;
    const ghost = `beta:${uniqueId('never')}`;
    const answers: Record<string, { foreign: unknown; ghost: unknown }> = {};
    for (const [name, call] of Object.entries(DATA_PLANE_CALLS)) {
      answers[name] = {
        foreign: await answerOf(acme.pool, call.sql, foreign, call.values),
        ghost: await answerOf(acme.pool, call.sql, ghost, call.values),
      };
    }
    for (const [name, { foreign: f, ghost: g }] of Object.entries(answers)) expect({ name, answer: f }).toEqual({ name, answer: g });
    expect(answers.transcript.foreign).toMatchObject({ code: 'SC404', message: 'session "acme:<id>" does not exist' });
    expect(answers.erase.foreign).toMatchObject({ code: 'SC404' });

    const { rows } = await stack().db.pool.query('SELECT closed_at, source, generation FROM lineages WHERE id = $1', [foreign]);
    expect(rows).toEqual([{ closed_at: null, source: 'service-b', generation: 0 }]);
    expect((await beta.client!.transcript(id)).messages).toEqual(turnsOf('beta'));
    expect(await beta.client!.appendedUnder(id, 'turn-1')).toEqual(turnsOf('beta'));
  });

  it("compacts both tenants' chat-7 at once through the one worker, each in its own workflow, each head with its own words only", async () => {
    await Promise.all(
      [acme, beta].map(async (tenant, i) => {
        await tenant.client!.createSession({ sessionId: 'chat-7' });
        await tenant.client!.append('chat-7', [...turnsOf(['acme', 'beta'][i]), ...agentTurn(4), ...agentTurn(5)]);
      }),
    );
    const [a, b] = await Promise.all([acme.client!.compact('chat-7', { force: true }), beta.client!.compact('chat-7', { force: true })]);
    expect([a.outcome, b.outcome]).toEqual(['compacted', 'compacted']);
    expect([a.sessionId, b.sessionId]).toEqual(['acme:chat-7--g1', 'beta:chat-7--g1']);
    const heads = { acme: JSON.stringify(await acme.client!.transcript('chat-7')), beta: JSON.stringify(await beta.client!.transcript('chat-7')) };
    expect(heads.acme).toContain('acme:chat-7--g1');
    expect(heads.acme).not.toContain('[tenant beta]');
    expect(heads.beta).not.toContain('[tenant acme]');
    for (const id of ['session-lineage/acme:chat-7', 'session-lineage/beta:chat-7']) {
      expect((await stack().temporal.workflow.getHandle(id).describe()).status.name).toBe('RUNNING');
    }
    await expect(stack().temporal.workflow.getHandle('session-lineage/chat-7').describe()).rejects.toThrow(/not found/i);
  });

  it("is enforced a second time by row-level security: the owner's own reads and the tenant reader's SELECTs see the tenant's rows only", async () => {
    const id = uniqueId('rls');
    for (const tenant of [acme, beta]) {
      await tenant.client!.createSession({ sessionId: id });
      await tenant.client!.append(id, agentTurn(1), { appendKey: 'turn-1' });
    }
    // A function run as the owner that checks no tenant itself: only the policies stand between.
    await stack().db.pool.query(
      `CREATE OR REPLACE FUNCTION tenant_test_peek() RETURNS SETOF text LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
         AS $$ SELECT id FROM lineages UNION ALL SELECT session_id FROM messages UNION ALL SELECT lineage_id FROM sessions $$`,
    );
    await stack().db.pool.query('ALTER FUNCTION tenant_test_peek() OWNER TO sc_owner');
    await stack().db.pool.query(`GRANT EXECUTE ON FUNCTION tenant_test_peek() TO ${acme.login}, ${beta.login}`);
    const seen = async (tenant: Tenant, text: string) => new Set((await tenant.pool.query<{ name: string }>(text)).rows.map((r) => r.name.split(':')[0]));
    const all = new Set((await stack().db.pool.query<{ id: string }>('SELECT tenant_test_peek() AS id')).rows.map((r) => r.id.split(':')[0]));
    expect(all).toEqual(new Set(['acme', 'beta']));
    expect(await seen(acme, 'SELECT tenant_test_peek() AS name')).toEqual(new Set(['acme']));
    expect(await seen(beta, 'SELECT tenant_test_peek() AS name')).toEqual(new Set(['beta']));
    for (const [table, column] of [
      ['lineages', 'id'],
      ['sessions', 'id'],
      ['messages', 'session_id'],
      ['append_keys', 'lineage_id'],
    ]) {
      expect({ table, names: [...(await seen(acmeReader, `SELECT ${column} AS name FROM ${table}`))] }).toEqual({ table, names: ['acme'] });
    }
    // The mapping of logins to tenants is the administrator's: no tenant reads it.
    await expect(acmeReader.pool.query('SELECT login, tenant FROM tenant_logins')).rejects.toMatchObject({ code: '42501' });
    await expect(acme.pool.query('SELECT login, tenant FROM tenant_logins')).rejects.toMatchObject({ code: '42501' });
  });

  it("lists, and audits, the tenant's own lineages only: the operator's reads filter by the policies alone", async () => {
    const id = uniqueId('listed');
    for (const tenant of [acme, beta]) {
      await tenant.client!.createSession({ sessionId: id, source: 'listing' });
      await tenant.client!.append(id, agentTurn(2));
    }
    const listed = await acme.client!.operator.listLineages({ search: id });
    expect(listed.lineages.map((l) => l.lineageId)).toEqual([`acme:${id}`]);
    expect((await acme.client!.operator.history(id)).lineage.lineageId).toBe(`acme:${id}`);
    const { rows } = await acme.pool.query<{ report: { lineages: number } }>('SELECT session_audit(NULL) AS report');
    const { rows: own } = await stack().db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM lineages WHERE id LIKE 'acme:%'");
    expect(rows[0].report.lineages).toBe(own[0].n);
  });

  it("gives a tenant's own worker (a login in sc_worker mapped to it) no other tenant's lineage through its functions", async () => {
    const acmeWorker = await createTenant('sc_worker', 'acme', false);
    const id = uniqueId('own-worker');
    for (const tenant of [acme, beta]) {
      await tenant.client!.createSession({ sessionId: id });
      await tenant.client!.append(id, agentTurn(1));
    }
    const lock = async (lineageId: string) => {
      const client = await acmeWorker.pool.connect();
      try {
        await client.query('BEGIN');
        const { rows } = await client.query<{ rows: unknown[] }>('SELECT sc_compaction_lock($1, $1, 0) AS rows', [lineageId]);
        await client.query('ROLLBACK');
        return rows[0].rows.length;
      } finally {
        client.release();
      }
    };
    expect({ own: await lock(`acme:${id}`), other: await lock(`beta:${id}`) }).toEqual({ own: agentTurn(1).length, other: 0 });
    const abort = (lineageId: string) =>
      acmeWorker.pool.query<{ answer: unknown }>('SELECT sc_job_abort($1::jsonb) AS answer', [
        JSON.stringify({
          jobId: `abort-${lineageId}`,
          lineageId,
          parentSessionId: lineageId,
          generation: 1,
          requestIds: [],
          trigger: 'signal',
          model: 'm',
          reason: 'test',
        }),
      ]);
    expect((await abort(`beta:${id}`)).rows[0].answer).toEqual({ missing: true });
    expect((await abort(`acme:${id}`)).rows[0].answer).toMatchObject({ aborted: true, headSessionId: `acme:${id}` });
    await expect(acmeWorker.pool.query('SELECT session_transcript($1)', [`beta:${id}`])).rejects.toMatchObject({ code: 'SC404' });
    const { rows } = await stack().db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM compactions WHERE lineage_id = $1', [`beta:${id}`]);
    expect(rows[0].n).toBe(0);
  });

  it('refuses an application login with no tenant once tenants are on', async () => {
    // The stack's own client login is in sc_app and has no tenant.
    await expect(stack().client.transcript(uniqueId('untenanted'))).rejects.toThrow(/has no tenant, and tenants are on/);
    // The reads that name no lineage check too: mapped to none, the row policies would show every tenant's rows.
    await expect(stack().client.operator.listLineages()).rejects.toThrow(/has no tenant, and tenants are on/);
    await expect(stack().client.operator.compaction('session-lineage/beta:chat-7/run/1')).rejects.toThrow(/has no tenant, and tenants are on/);
    await expect(stack().client.operator.audit()).rejects.toThrow(/has no tenant, and tenants are on/);
  });
});
