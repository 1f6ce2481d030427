/**
 * Upgrades keep everything. A database is migrated only to 0002 (the last migration before
 * the valid-head and fencing changes), filled the way the code of that time wrote it, with
 * work in flight, and then migrated to the newest schema:
 * - a rotated lineage: a compaction committed at 0002 (no summarised range, kept rows without
 *   lineage sequence, appends carried past its watermark), appends after it, a `running`
 *   job row left by a compaction that never finished, and a compaction request its workflow
 *   had already scheduled before the upgrade;
 * - a lineage never compacted, with a request scheduled before the upgrade as well;
 * - an in-place lineage compacted at 0002 (archived rows).
 * Afterwards the schema equals a fresh one (so every migration present is covered, including
 * ones added later), the audit and the test's own ledger find nothing lost, the open
 * workflows go on (their histories replay on a new worker) and new appends and compactions
 * work on every lineage.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { Pool } from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { openaiChat } from '../../src/compaction/dialects/openai-chat';
import { MIGRATIONS_DIR, runMigrations } from '../../src/db/database';
import { lineageOf } from '../../src/db/session-store';
import { childSessionId, compactSignal, lineageWorkflowId, type SessionLineageInput } from '../../src/workflows/contract';
import { DEFAULT_LINEAGE_SETTINGS } from '../../src/workflows/settings';
import { AppendLedger, ledgerProblems } from '../support/ledger';
import { conversation, uniqueId, useTestStack } from '../support/stack';

/** The last migration before this week's changes: the database is filled at this schema. */
const OLD_TAG = '0002_lineage_sequence';

const stack = useTestStack({ emptyDatabase: true, noWorker: true });

interface Journal {
  entries: Array<{ idx: number; tag: string; when: number }>;
}
const journal = (): Journal => JSON.parse(readFileSync(path.join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8'));

/** A copy of the migrations folder that ends at OLD_TAG. */
function oldMigrationsFolder(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'migrations-0002-'));
  mkdirSync(path.join(dir, 'meta'));
  const all = journal();
  const last = all.entries.findIndex((e) => e.tag === OLD_TAG);
  expect(last).toBeGreaterThanOrEqual(0);
  const entries = all.entries.slice(0, last + 1);
  for (const e of entries) copyFileSync(path.join(MIGRATIONS_DIR, `${e.tag}.sql`), path.join(dir, `${e.tag}.sql`));
  writeFileSync(path.join(dir, 'meta/_journal.json'), JSON.stringify({ ...all, entries }));
  return dir;
}

/** Everything about a schema that migrations create, in a comparable form. */
async function schemaOf(pool: Pool) {
  const q = async (text: string) => (await pool.query(text)).rows;
  return {
    columns: await q(
      `select table_name, column_name, data_type, is_nullable, column_default from information_schema.columns where table_schema = 'public' order by 1, 2`,
    ),
    indexes: await q(`select indexname, indexdef from pg_indexes where schemaname = 'public' order by 1`),
    constraints: await q(`select conname, pg_get_constraintdef(oid) as def from pg_constraint where connamespace = 'public'::regnamespace order by 1`),
    triggers: await q(`select tgname, pg_get_triggerdef(oid) as def from pg_trigger where not tgisinternal order by 1`),
    functions: await q(`select proname, md5(prosrc) as src from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public' order by 1`),
  };
}

type Message = Record<string, unknown>;
/** The summary message as the code of every release wrote it (openai-chat). */
const summaryMessage = (text: string): Message => openaiChat.summaryMessages(text, undefined)[0];
const tokensOf = (m: Message) => Math.ceil(JSON.stringify(m).length / 4);

/** Inserts rows the way the 0002-era code wrote them; returns their ids. */
async function insertRows(
  pool: Pool,
  sessionId: string,
  firstSeq: number,
  rows: Array<{ m: Message; lineageSeq?: number; origin?: number; by?: string }>,
): Promise<number[]> {
  const ids: number[] = [];
  for (const [i, r] of rows.entries()) {
    const { rows: inserted } = await pool.query<{ id: string }>(
      `insert into messages (session_id, seq, role, content, tool_calls, tool_call_id, name, token_estimate, lineage_seq, origin_message_id, written_by_compaction)
       values ($1, $2, $3, $4::jsonb, $5::jsonb, $6, $7, $8, $9, $10, $11) returning id`,
      [
        sessionId,
        firstSeq + i,
        r.m.role,
        JSON.stringify(r.m.content ?? null),
        r.m.tool_calls ? JSON.stringify(r.m.tool_calls) : null,
        r.m.tool_call_id ?? null,
        r.m.name ?? null,
        tokensOf(r.m),
        r.lineageSeq ?? null,
        r.origin ?? null,
        r.by ?? null,
      ],
    );
    ids.push(Number(inserted[0].id));
  }
  return ids;
}

async function newLineage(pool: Pool, id: string, mode: 'rotate' | 'in_place') {
  await pool.query(`insert into lineages (id, head_session_id, mode) values ($1, $1, $2)`, [id, mode]);
  await pool.query(`insert into sessions (id, lineage_id) values ($1, $1)`, [id]);
}

const headTokens = (pool: Pool, session: string) =>
  pool.query(
    `update lineages set head_tokens = (select coalesce(sum(token_estimate), 0) from messages where session_id = $1 and archived_at is null) where head_session_id = $1`,
    [session],
  );

describe('upgrading a database filled at migration 0002', () => {
  it('migrates to the newest schema with nothing lost; open workflows, appends and compactions go on', async () => {
    const pool = stack().db.pool;
    const old = oldMigrationsFolder();
    try {
      await migrate(drizzle(pool), { migrationsFolder: old });
    } finally {
      rmSync(old, { recursive: true, force: true });
    }
    const ledger = new AppendLedger();
    const convo = conversation(12); // 49 messages: a system prompt and 12 four-message turns

    // 1. Rotated at 0002: the summary covered up to seq 45; 46..49 arrived during it and were
    // carried; 50..51 were appended to the child afterwards; job 2 was left `running`.
    const rot = uniqueId('up-rot');
    const rotChild = childSessionId(rot, 1);
    await newLineage(pool, rot, 'rotate');
    const parentIds = await insertRows(
      pool,
      rot,
      1,
      convo.map((m, i) => ({ m, lineageSeq: i + 1 })),
    );
    ledger.record(rot, convo, { lastLineageSeq: 49, count: 49 });
    const job1 = `legacy/${rot}/1`;
    await pool.query(`insert into sessions (id, lineage_id, parent_session_id, generation) values ($1, $2, $2, 1)`, [rotChild, rot]);
    await insertRows(pool, rotChild, 1, [
      { m: convo[0], by: job1 },
      { m: summaryMessage('Legacy summary: modules 0 to 9 were refactored and tested.'), by: job1 },
      ...convo.slice(41, 45).map((m) => ({ m, by: job1 })), // kept tail: no lineage sequence at 0002
      ...convo.slice(45, 49).map((m, i) => ({ m, lineageSeq: 46 + i, origin: parentIds[45 + i], by: job1 })), // carried
    ]);
    await pool.query(`update sessions set ended_at = now(), end_reason = 'compression' where id = $1`, [rot]);
    const afterCommit = [
      { role: 'user', content: 'Request 12: now document the parser.' },
      { role: 'assistant', content: 'The parser is documented.' },
    ];
    await insertRows(
      pool,
      rotChild,
      11,
      afterCommit.map((m, i) => ({ m, lineageSeq: 50 + i })),
    );
    ledger.record(rot, afterCommit, { lastLineageSeq: 51, count: 2 });
    await pool.query(`update lineages set head_session_id = $2, generation = 1, appended_count = 51 where id = $1`, [rot, rotChild]);
    await headTokens(pool, rotChild);
    await pool.query(
      `insert into compactions (id, lineage_id, parent_session_id, child_session_id, generation, request_ids, trigger, model, watermark_seq, attempts, outcome, finished_at)
       values ($1, $2, $2, $3, 1, '["r1"]', 'update', 'fake-model', 45, 1, 'compacted', now()),
              ($4, $2, $3, null, 2, '["r2"]', 'signal', 'fake-model', null, 1, 'running', null)`,
      [job1, rot, rotChild, `legacy/${rot}/2`],
    );

    // 2. Never compacted.
    const plain = uniqueId('up-plain');
    await newLineage(pool, plain, 'rotate');
    await insertRows(
      pool,
      plain,
      1,
      convo.map((m, i) => ({ m, lineageSeq: i + 1 })),
    );
    ledger.record(plain, convo, { lastLineageSeq: 49, count: 49 });
    await pool.query(`update lineages set appended_count = 49 where id = $1`, [plain]);
    await headTokens(pool, plain);

    // 3. In place at 0002: rows 1..49 archived, the new rows appended after them.
    const inPlace = uniqueId('up-inplace');
    const job3 = `legacy/${inPlace}/1`;
    await newLineage(pool, inPlace, 'in_place');
    await insertRows(
      pool,
      inPlace,
      1,
      convo.map((m, i) => ({ m, lineageSeq: i + 1 })),
    );
    ledger.record(inPlace, convo, { lastLineageSeq: 49, count: 49 });
    await pool.query(`update messages set archived_at = now(), archived_by_compaction = $2 where session_id = $1`, [inPlace, job3]);
    await insertRows(pool, inPlace, 50, [
      { m: convo[0], by: job3 },
      { m: summaryMessage('Legacy in-place summary of modules 0 to 10.'), by: job3 },
      ...convo.slice(45, 49).map((m) => ({ m, by: job3 })),
    ]);
    await insertRows(
      pool,
      inPlace,
      56,
      afterCommit.map((m, i) => ({ m, lineageSeq: 50 + i })),
    );
    ledger.record(inPlace, afterCommit, { lastLineageSeq: 51, count: 2 });
    await pool.query(`update sessions set generation = 1 where id = $1`, [inPlace]);
    await pool.query(`update lineages set generation = 1, appended_count = 51 where id = $1`, [inPlace]);
    await headTokens(pool, inPlace);
    await pool.query(
      `insert into compactions (id, lineage_id, parent_session_id, child_session_id, generation, request_ids, trigger, model, watermark_seq, attempts, outcome, finished_at)
       values ($1, $2, $2, $2, 1, '["r3"]', 'update', 'fake-model', 49, 1, 'compacted', now())`,
      [job3, inPlace],
    );

    // Workflows already running before the upgrade: a worker of the old release takes their
    // requests, schedules the summaries and starts them, then stops mid-summary for the
    // upgrade. Its activities are stand-ins that never touch Postgres: the lineages are open,
    // and a summary runs until the worker shuts down (it is retried after the upgrade).
    const { workflowBundlePath, temporalAddress } = inject('stack');
    const settings = { ...DEFAULT_LINEAGE_SETTINGS, leaseTtlMs: 3000, retryInitialIntervalMs: 200, retryMaximumIntervalMs: 1000 };
    const inputOf = (lineageId: string, head: string, generation: number): SessionLineageInput => ({
      lineageId,
      headSessionId: head,
      generation,
      mode: 'rotate',
      settings,
    });
    const connection = await NativeConnection.connect({ address: temporalAddress });
    try {
      const oldWorker = await Worker.create({
        connection,
        namespace: stack().config.temporal.namespace,
        taskQueue: stack().config.temporal.taskQueue,
        workflowBundle: { codePath: workflowBundlePath },
        activities: { isLineageClosed: async () => false, compactSession: () => Context.current().cancelled },
        shutdownGraceTime: '1s',
      });
      const running = oldWorker.run();
      for (const [lineage, head, generation] of [
        [rot, rotChild, 1],
        [plain, plain, 0],
      ] as const) {
        await stack().temporal.workflow.signalWithStart('sessionLineageWorkflow', {
          workflowId: lineageWorkflowId(lineage),
          taskQueue: stack().config.temporal.taskQueue,
          args: [inputOf(lineage, head, generation)],
          signal: compactSignal,
          signalArgs: [{ sessionId: head, requestId: 'before-upgrade' }],
        });
      }
      for (const lineage of [rot, plain]) {
        const handle = stack().temporal.workflow.getHandle(lineageWorkflowId(lineage));
        const deadline = Date.now() + 30_000;
        while (((await handle.describe()).raw.pendingActivities ?? []).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        expect((await handle.describe()).raw.pendingActivities ?? []).toHaveLength(1); // the summary is in flight
      }
      oldWorker.shutdown();
      await running;
    } finally {
      await connection.close();
    }

    // The upgrade: every migration after 0002, as the worker runs them on start.
    await runMigrations(stack().db);
    const applied = await pool.query<{ n: number }>('select count(*)::int as n from drizzle.__drizzle_migrations');
    expect(applied.rows[0].n).toBe(journal().entries.length);
    expect(journal().entries.length).toBeGreaterThan(3);
    const fresh = new Pool({ connectionString: inject('stack').databaseUrl, max: 1 });
    try {
      expect(await schemaOf(pool)).toEqual(await schemaOf(fresh));
    } finally {
      await fresh.end();
    }
    // Every row became its body: the message exactly as the old columns held it (JSON-equal),
    // the summaries and kept rows without a lineage sequence included; the lineages are openai-chat.
    expect((await pool.query(`select count(*)::int as n from messages where body is null`)).rows[0].n).toBe(0);
    const rotHead = await stack().client.transcript(rot, { includeArchived: true });
    expect(rotHead).toMatchObject({ sessionId: rotChild, dialect: 'openai-chat', archived: [] });
    expect(rotHead.messages).toEqual([
      convo[0],
      summaryMessage('Legacy summary: modules 0 to 9 were refactored and tested.'),
      ...convo.slice(41, 49),
      ...afterCommit,
    ]);
    expect(rotHead.seqs).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    const plainHead = await stack().client.transcript(plain);
    expect(plainHead.messages).toEqual(convo);
    const inPlaceHead = await stack().client.transcript(inPlace, { includeArchived: true });
    expect(inPlaceHead.messages).toEqual([convo[0], summaryMessage('Legacy in-place summary of modules 0 to 10.'), ...convo.slice(45, 49), ...afterCommit]);
    expect(inPlaceHead.seqs).toEqual(Array.from({ length: 8 }, (_, i) => 50 + i));
    expect(inPlaceHead.archived!.map(({ seq, message }) => ({ seq, message }))).toEqual(convo.map((message, i) => ({ seq: i + 1, message })));
    for (const lineage of [rot, plain, inPlace]) expect((await lineageOf(stack().db.db, lineage)).dialect).toBe('openai-chat');
    const clean = { forks: 0, orphans: 0, writesAfterEnd: 0, lostMessages: 0, duplicatedMessages: 0, sequenceGaps: 0 };
    expect(await stack().client.operator.audit()).toMatchObject(clean);
    expect(ledgerProblems(await ledger.check(pool, { legacyWatermark: true }))).toEqual([]);

    // The open workflows go on: a new worker replays their histories and runs the summaries
    // they scheduled before the upgrade.
    await stack().startWorker();
    expect(await stack().client.waitForResult(rot, 'before-upgrade')).toMatchObject({ outcome: 'compacted', sessionId: childSessionId(rot, 2), generation: 2 });
    expect(await stack().client.waitForResult(plain, 'before-upgrade')).toMatchObject({
      outcome: 'compacted',
      sessionId: childSessionId(plain, 1),
      generation: 1,
    });

    // New appends and compactions work on every lineage, the in-place one included.
    for (const lineage of [rot, plain, inPlace]) {
      const batch = [
        { role: 'user', content: `Request 13 for ${lineage}: add a changelog entry.` },
        { role: 'assistant', content: 'Added.' },
      ];
      ledger.record(lineage, batch, await stack().client.append(lineage, batch));
      const head = (await stack().client.transcript(lineage)).sessionId;
      const result = await stack().client.compact(head, { force: true });
      expect(result.outcome).toBe('compacted');
    }
    expect((await stack().client.transcript(inPlace)).sessionId).toBe(inPlace);
    const summaryRows = await pool.query<{ from_seq: number | null }>(
      `select summarised_from_seq as from_seq from compactions where outcome = 'compacted' and id not like 'legacy/%'`,
    );
    expect(summaryRows.rows.length).toBe(5);
    // New commits record their summarised range (a middle made only of rows kept verbatim at
    // 0002, which carry no lineage sequence, has none: those are covered by the old watermark).
    expect(summaryRows.rows.some((r) => r.from_seq !== null)).toBe(true);
    expect(await stack().client.operator.audit()).toMatchObject(clean);
    const report = await ledger.check(pool, { legacyWatermark: true });
    expect(ledgerProblems(report)).toEqual([]);
    expect(report.checked).toBe(3 * 49 + 2 * 2 + 3 * 2);
    // The row left `running` by the old release is still there, untouched, and harms nothing.
    const leftover = await pool.query(`select outcome from compactions where id = $1`, [`legacy/${rot}/2`]);
    expect(leftover.rows).toEqual([{ outcome: 'running' }]);
  });
});
