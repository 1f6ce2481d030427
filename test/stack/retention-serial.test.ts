/**
 * Retention one batch at a time, on the real stack (issue 33, point 3): two batches held open
 * at once, a manual run asked for while one runs, appends while a batch writes its export,
 * and the export file's mode.
 *
 * Gaps are counted with this file's own SQL (every lineage sequence number from 1 to the
 * lineage's appended count is either still stored or inside a pruned range), beside the audit.
 * The export write is held open by the worker's test seam (beforeRetentionExportWrite) until
 * the test releases it: conditions, not timing. Proven:
 * - two batches held open together: the second waits for the first's commit (seen waiting on
 *   the retention lock in pg_locks), and no sequence number goes unrecorded;
 * - a manual run asked for while one is running is refused with RetentionRunningError and
 *   starts nothing; once the first ends, a manual run starts again; the same through the
 *   `sessions` command interrupted with SIGINT (its workflow goes on; the re-run exits 3);
 * - an append to the lineage being pruned completes while the batch's export is being written;
 * - the export is owner-only (0600), also a file an earlier run left world-readable; a lineage's exported lines start with its id, as docs/data.md says.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { manualRetentionWorkflowId } from '../../src/client/retention';
import { PROJECT_ROOT } from '../../src/config';
import { RetentionRunningError } from '../../src/errors';
import { messyTranscript } from '../support/messy';
import { uniqueId, useTestStack } from '../support/stack';

const exportDir = path.join(mkdtempSync(path.join(os.tmpdir(), 'retention-export-')), 'exports');

/** The export write the worker is held at, while a test holds it. */
let held: { reached: () => void; released: Promise<void> } | undefined;
let exportsWritten = 0;

const stack = useTestStack({
  env: { RETENTION_EXPORT_DIR: exportDir },
  worker: {
    async beforeRetentionExportWrite() {
      const gate = held;
      if (gate) {
        gate.reached();
        await gate.released;
      }
      exportsWritten++;
    },
  },
});

afterAll(() => rmSync(path.dirname(exportDir), { recursive: true, force: true }));

/** Holds every export write from now until release(); `reached` resolves once a batch is held. */
function holdExports() {
  let reached!: () => void;
  let release!: () => void;
  const reachedP = new Promise<void>((resolve) => (reached = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  held = { reached, released };
  return {
    reached: reachedP,
    release() {
      held = undefined;
      release();
    },
  };
}

/** Rejects if `promise` has not settled within `ms`: the bound of a wait that must not stall. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not complete within ${ms} ms`)), ms)));
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const n = async (query: ReturnType<typeof sql>) => Number(((await stack().db.db.execute(query)).rows[0] as { n: string | number }).n);

/** Sequence numbers of the lineage neither stored nor inside a pruned range (own SQL). */
const gapsOf = (id: string) =>
  n(sql`select count(*) as n from generate_series(1, (select appended_count from lineages where id = ${id})) g(seq)
        where not exists (select 1 from messages m join sessions s on s.id = m.session_id where s.lineage_id = ${id} and m.lineage_seq = g.seq)
          and not exists (select 1 from pruned_messages p where p.lineage_id = ${id} and g.seq between p.from_seq and p.to_seq)`);

/** Appends a messy transcript in batches and compacts the head after each, `rounds` times (rotation: the parents end). */
async function grow(id: string, rounds: number) {
  await stack().client.createSession({ sessionId: id });
  for (let r = 0; r < rounds; r++) {
    const { sessionId: head } = await stack().client.append(id, messyTranscript('openai-chat', 60 + r, 6).slice(r === 0 ? 0 : 1), {
      appendKey: `${id}-batch-${r}`,
    });
    const result = await stack().client.compact(head, { force: true });
    expect(result.outcome, result.reason).toBe('compacted');
  }
}

const ENDED = { endedSessionDays: 0 };

describe('retention, one batch at a time', () => {
  it('two batches held open together: the second waits for the first, and the audit finds no gap', async () => {
    const id = uniqueId('two-batches');
    await grow(id, 4);
    // A sequence number whose every copy is in an ended session, with two copies or more: two
    // batches that split its copies are the race.
    const split = (
      await stack().db.db.execute(sql`
        select m.lineage_seq as seq, min(m.id) as first, max(m.id) as last from messages m join sessions s on s.id = m.session_id
        where s.lineage_id = ${id} and m.lineage_seq is not null
        group by m.lineage_seq having count(*) >= 2 and bool_and(s.ended_at is not null)
        order by m.lineage_seq limit 1`)
    ).rows[0] as { seq: number; first: string; last: string } | undefined;
    expect(split, 'a message copied into two ended sessions').toBeDefined();
    // The first batch takes the doomed rows up to the first copy (ids in order), the second the rest.
    const firstBatch = await n(sql`select count(*) as n from messages m join sessions s on s.id = m.session_id
                                  where s.ended_at is not null and m.id <= ${split!.first}`);

    let bWaited: boolean | undefined;
    const a = await stack().db.pool.connect();
    const b = await stack().db.pool.connect();
    try {
      await a.query('begin');
      await a.query('select retention_prune($1::jsonb, $2::integer)', [JSON.stringify(ENDED), firstBatch]);
      // The fault is set up: batch A deleted the first copy and not the last, and holds them.
      const inA = await a.query<{ n: string }>('select count(*) as n from messages where id in ($1, $2)', [split!.first, split!.last]);
      expect(Number(inA.rows[0].n)).toBe(1);

      const bPid = (await b.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0].pid;
      await b.query('begin');
      let bDone = false;
      const bPrune = b.query('select retention_prune($1::jsonb, $2::integer)', [JSON.stringify(ENDED), 100_000]).finally(() => (bDone = true));
      // Batch B either waits on the retention lock (seen in pg_locks) or, without it, has already run.
      bWaited = await until('batch B to wait or finish', 30_000, async () => {
        if (bDone) return false;
        const waiting = await n(sql`select count(*) as n from pg_locks where locktype = 'advisory' and not granted and pid = ${bPid}`);
        return waiting > 0 ? true : undefined;
      });
      await a.query('commit');
      await bPrune;
      await b.query('commit');
    } finally {
      await a.query('rollback').catch(() => undefined);
      await b.query('rollback').catch(() => undefined);
      a.release();
      b.release();
    }

    expect(
      await n(sql`select count(*) as n from messages m join sessions s on s.id = m.session_id where s.lineage_id = ${id} and s.ended_at is not null`),
    ).toBe(0);
    expect(await gapsOf(id), 'sequence numbers neither stored nor pruned (own SQL)').toBe(0);
    const audit = await stack().client.operator.auditLineage(id);
    expect([audit.lostMessages, audit.sequenceGaps]).toEqual([0, 0]);
    expect(bWaited, 'batch B waited for batch A').toBe(true);
  });

  it('a manual run while one is running is refused and starts nothing; appends go on while a batch writes its export', async () => {
    const id = uniqueId('overlap');
    await grow(id, 3);
    const exportsBefore = exportsWritten;
    const hold = holdExports();
    const first = stack().client.operator.runRetention(ENDED, { batch: 5 });
    let firstFailed: unknown;
    first.catch((error: unknown) => (firstFailed = error));
    try {
      await within(hold.reached, 60_000, 'the first run reaching its export');

      // An append to the lineage whose rows the held batch is deleting: not stalled by the export.
      const appended = await within(
        stack().client.append(id, [{ role: 'user', content: 'While retention exports: {"status": "ok"} — go on 😀' }]),
        30_000,
        'an append while the export is written',
      );
      expect(appended.count).toBe(1);
      expect(exportsWritten, 'the export is still held').toBe(exportsBefore);

      // A second manual run: refused, naming the running one; nothing started.
      const workflowId = manualRetentionWorkflowId(stack().config.temporal.taskQueue);
      const second = await within(
        stack()
          .client.operator.runRetention(ENDED, { batch: 5 })
          .then(
            () => undefined,
            (error: unknown) => error,
          ),
        30_000,
        'the answer to a second manual run',
      );
      expect(second).toBeInstanceOf(RetentionRunningError);
      expect((second as RetentionRunningError).workflowId).toBe(workflowId);
      expect((second as Error).message).toMatch(/already running .*nothing was started/);
      const runs: string[] = [];
      for await (const run of stack().temporal.workflow.list({
        query: `WorkflowType = 'retentionWorkflow' AND TaskQueue = '${stack().config.temporal.taskQueue}'`,
      }))
        runs.push(run.workflowId);
      expect(
        runs.every((runId) => runId === workflowId),
        runs.join(', '),
      ).toBe(true);
    } finally {
      hold.release();
    }
    const totals = await first;
    expect(firstFailed).toBeUndefined();
    expect(totals.batches).toBeGreaterThanOrEqual(2);
    expect(exportsWritten).toBeGreaterThan(exportsBefore);

    // Once it ended, a manual run starts again.
    const again = await stack().client.operator.runRetention({ ...ENDED, archivedDays: 0 });
    expect(again.batches).toBeGreaterThanOrEqual(1);
    expect(await gapsOf(id)).toBe(0);
    expect((await stack().client.operator.auditLineage(id)).sequenceGaps).toBe(0);
    expect((await stack().client.transcript(id)).messages.at(-1)).toEqual({
      role: 'user',
      content: 'While retention exports: {"status": "ok"} — go on 😀',
    });
  });

  it('an interrupted `sessions retention run` goes on as its workflow; running the command again exits 3 naming it, and runs once it ended', async () => {
    const id = uniqueId('cli-rerun');
    await grow(id, 3);
    const hold = holdExports();
    // An operator's command: it starts the retention workflow (the worker prunes, as sc_worker) and reads no table.
    const env = { ...process.env, ...stack().env, DATABASE_URL: stack().readerDatabaseUrl };
    const cli = (args: string[]) =>
      spawn(process.execPath, [path.join(PROJECT_ROOT, 'bin/sessions.js'), ...args], { env, cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const outputOf = (child: ReturnType<typeof cli>) =>
      new Promise<{ code: number | null; stdout: string }>((resolve) => {
        let stdout = '';
        child.stdout!.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
        child.once('close', (code) => resolve({ code, stdout }));
      });
    const workflowId = manualRetentionWorkflowId(stack().config.temporal.taskQueue);
    try {
      const first = cli(['retention', 'run', '--ended-days', '0', '--batch', '5', '--json']);
      const firstExit = outputOf(first);
      await within(hold.reached, 60_000, 'the first run reaching its export');
      // Interrupted: the command is gone, its workflow still runs.
      first.kill('SIGINT');
      expect((await within(firstExit, 30_000, 'the interrupted command to exit')).code).not.toBe(0);
      expect((await stack().temporal.workflow.getHandle(workflowId).describe()).status.name).toBe('RUNNING');

      const again = await within(outputOf(cli(['retention', 'run', '--ended-days', '0', '--json'])), 60_000, 'the second command');
      expect(again.code).toBe(3);
      expect(JSON.parse(again.stdout)).toMatchObject({ error: { type: 'RetentionRunningError', workflowId } });
    } finally {
      hold.release();
    }
    await stack().temporal.workflow.getHandle(workflowId).result();
    const last = await within(outputOf(cli(['retention', 'run', '--ended-days', '0', '--json'])), 60_000, 'the command after the run ended');
    expect(last.code).toBe(0);
    expect(JSON.parse(last.stdout)).toMatchObject({ batches: 1, messages: 0 });
    expect(await gapsOf(id)).toBe(0);
  });

  it('the export is owner-only, also a file an earlier run left readable; a lineage’s lines start with its id', async () => {
    const id = uniqueId('export-mode');
    await grow(id, 2);
    const file = path.join(exportDir, `pruned-${new Date().toISOString().slice(0, 10)}.jsonl`);
    // The day's file as an earlier release left it: world-readable.
    mkdirSync(exportDir, { recursive: true });
    writeFileSync(file, '', { flag: 'a' });
    chmodSync(file, 0o644);
    const totals = await stack().client.operator.runRetention({ ...ENDED, archivedDays: 0 });
    expect(totals.exported).toBeGreaterThan(0);
    expect((statSync(file).mode & 0o777).toString(8)).toBe('600');
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    const mine = lines.filter((line) => line.startsWith(`{"lineageId":${JSON.stringify(id)},`));
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.every((line) => (JSON.parse(line) as { lineageId: string }).lineageId === id)).toBe(true);
    expect(lines.filter((line) => (JSON.parse(line) as { lineageId: string }).lineageId === id)).toEqual(mine);
    // What docs/data.md says an erase leaves: the exported lines, until the operator removes them.
    await stack().client.deleteLineage(id);
    expect(
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => line.startsWith(`{"lineageId":${JSON.stringify(id)},`)),
    ).toEqual(mine);
  });
});
