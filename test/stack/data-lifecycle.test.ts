/**
 * The data's whole life, on the real stack: erasing a lineage (deleteLineage), retention
 * (a workflow Temporal runs, once or on a Schedule) and what storage costs once it ran.
 *
 * Rows are counted with this file's own SQL, never with the numbers the code under test
 * answers. Proven:
 * - an erase leaves no row that names the lineage and no run of its workflow; the same id
 *   is created again as a new, empty lineage that compacts;
 * - a compaction running when the erase lands is answered with a typed error and writes
 *   nothing afterwards;
 * - retention prunes ended sessions and archived rows in bounded batches, keeps every head
 *   exactly as it was, and the audit counts what it pruned as pruned: without the pruned
 *   ranges the same lineage would show sequence gaps (counted here);
 * - a Schedule runs it, and is removed again; while its run is still running (held at its
 *   export write), a manual run is refused with RetentionRunningError.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { RetentionRunningError, SessionCompactionError } from '../../src/errors';
import { messyTranscript } from '../support/messy';
import { uniqueId, useTestStack } from '../support/stack';

/** The export write of a retention batch is held here while a test holds it (the worker's test seam). */
let held: { reached: () => void; released: Promise<void> } | undefined;
const exportDir = mkdtempSync(path.join(os.tmpdir(), 'lifecycle-export-'));
const stack = useTestStack({
  env: { RETENTION_EXPORT_DIR: exportDir },
  worker: {
    async beforeRetentionExportWrite() {
      const gate = held;
      if (!gate) return;
      gate.reached();
      await gate.released;
    },
  },
});
afterAll(() => rmSync(exportDir, { recursive: true, force: true }));

const n = async (query: ReturnType<typeof sql>) => Number(((await stack().db.db.execute(query)).rows[0] as { n: string | number }).n);

/** Rows anywhere that name the lineage (own SQL). */
async function rowsOf(lineageId: string) {
  return {
    lineages: await n(sql`select count(*) as n from lineages where id = ${lineageId}`),
    sessions: await n(sql`select count(*) as n from sessions where lineage_id = ${lineageId}`),
    messages: await n(sql`select count(*) as n from messages where session_id = ${lineageId} or session_id like ${`${lineageId}--g%`}`),
    compactions: await n(sql`select count(*) as n from compactions where lineage_id = ${lineageId}`),
    appendKeys: await n(sql`select count(*) as n from append_keys where lineage_id = ${lineageId}`),
    pruned: await n(sql`select count(*) as n from pruned_messages where lineage_id = ${lineageId}`),
  };
}
const none = { lineages: 0, sessions: 0, messages: 0, compactions: 0, appendKeys: 0, pruned: 0 };

/** The lineage workflow's runs, as Temporal's visibility lists them (waits for the first to be listed). */
async function runIdsOf(lineageId: string): Promise<string[]> {
  const { workflowId } = stack().client.operator.workflowLocation(lineageId);
  for (let i = 0; i < 100; i++) {
    const runs: string[] = [];
    for await (const run of stack().temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push(run.runId);
    if (runs.length > 0) return runs;
    await new Promise((r) => setTimeout(r, 100));
  }
  return [];
}

let erasedRun: { workflowId: string; runIds: string[] } | undefined;
let gone: Promise<boolean> | undefined;

/** Resolves true once no run of the workflow can be described any more (bounded: 120 s). */
async function waitUntilGone(run: { workflowId: string; runIds: string[] }): Promise<boolean> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const left = await Promise.all(
      run.runIds.map((runId) =>
        stack()
          .temporal.workflow.getHandle(run.workflowId, runId)
          .describe()
          .then(
            () => true,
            () => false,
          ),
      ),
    );
    if (!left.includes(true)) return true;
    await new Promise((r) => setTimeout(r, 500));
  }
  return false;
}

/** Appends a messy transcript in batches and compacts the head after each, `rounds` times. */
async function grow(id: string, rounds: number) {
  for (let r = 0; r < rounds; r++) {
    const { sessionId: head } = await stack().client.append(id, messyTranscript('openai-chat', 40 + r, 6).slice(r === 0 ? 0 : 1), {
      appendKey: `${id}-batch-${r}`,
    });
    const result = await stack().client.compact(head, { force: true });
    expect(result.outcome, result.reason).toBe('compacted');
  }
}

const headOf = async (id: string) => (await stack().client.transcript(id)).sessionId;

describe('deleteLineage', () => {
  it('erases every row and every workflow run; the id comes back as a new, empty lineage', async () => {
    const id = uniqueId('erase');
    await stack().client.createSession({ sessionId: id });
    await grow(id, 3);
    const before = { ...(await rowsOf(id)), runIds: await runIdsOf(id) };
    expect(before.runIds.length).toBeGreaterThan(0);
    expect(before.sessions).toBe(4);
    expect(before.compactions).toBeGreaterThanOrEqual(3);
    expect(before.appendKeys).toBe(3);

    const erased = await stack().client.deleteLineage(`${id}--g2`); // any session id of the lineage
    expect(erased.lineageId).toBe(id);
    expect(await rowsOf(id)).toEqual(none);
    // Temporal deletes executions in the background (the dev server within about a minute):
    // checked at the end of this file, while the other tests run.
    erasedRun = { workflowId: stack().client.operator.workflowLocation(id).workflowId, runIds: before.runIds };
    expect(erased.workflowRuns).toBe(before.runIds.length);
    gone = waitUntilGone(erasedRun);
    await expect(stack().client.transcript(id)).rejects.toThrow(/does not exist/);

    const again = await stack().client.createSession({ sessionId: id, mode: 'in_place' });
    expect(again.mode).toBe('in_place');
    expect((await stack().client.transcript(id)).messages).toEqual([]);
    await grow(id, 1);
    const audit = await stack().client.operator.auditLineage(id);
    expect([audit.forks, audit.lostMessages, audit.sequenceGaps, audit.duplicatedByKey]).toEqual([0, 0, 0, 0]);
  });

  it('a compaction running when the erase lands gets a typed error and writes nothing after it', async () => {
    const id = uniqueId('erase-race');
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, messyTranscript('openai-chat', 9, 8));
    const asked = stack().llm.requests.length;
    stack().llm.script({ delayMs: 1_200 });
    const compacting = stack()
      .client.compact(id, { force: true })
      .then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      );
    await stack().llm.waitForRequests(asked + 1, 30_000);
    await stack().client.deleteLineage(id);
    const settled = await compacting;
    expect('error' in settled && settled.error, JSON.stringify(settled)).toBeInstanceOf(SessionCompactionError);
    expect(await rowsOf(id)).toEqual(none);
    // The same id again, compacted: its summary request comes after the erased job's, and ends after it.
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, messyTranscript('openai-chat', 10, 8));
    stack().llm.script({ delayMs: 1_500 });
    expect((await stack().client.compact(id, { force: true })).outcome).toBe('compacted');
    const rows = await rowsOf(id);
    expect(rows.sessions).toBe(2);
    expect(rows.compactions).toBe(1);
  });
});

describe('retention', () => {
  it('prunes ended sessions and archived rows in bounded batches; heads stay exactly as they were; the audit counts the pruned', async () => {
    const rotate = uniqueId('keep-rotate');
    const inPlace = uniqueId('keep-in-place');
    await stack().client.createSession({ sessionId: rotate });
    await stack().client.createSession({ sessionId: inPlace, mode: 'in_place' });
    await grow(rotate, 3);
    await grow(inPlace, 3);
    const heads = { rotate: await stack().client.transcript(rotate), inPlace: await stack().client.transcript(inPlace) };
    const dead = () =>
      n(sql`select count(*) as n from messages m join sessions s on s.id = m.session_id
            where s.lineage_id in (${rotate}, ${inPlace}) and (s.ended_at is not null or m.archived_at is not null)`);
    expect(await dead()).toBeGreaterThan(20);

    const totals = await stack().client.operator.runRetention({ endedSessionDays: 0, archivedDays: 0 }, { batch: 7 });
    expect(totals.batches).toBeGreaterThanOrEqual(3);
    expect(await dead()).toBe(0);
    expect(await stack().client.transcript(rotate)).toEqual(heads.rotate);
    expect(await stack().client.transcript(inPlace)).toEqual(heads.inPlace);
    for (const id of [rotate, inPlace]) {
      const audit = await stack().client.operator.auditLineage(id);
      expect([audit.forks, audit.orphans, audit.lostMessages, audit.duplicatedMessages, audit.sequenceGaps], id).toEqual([0, 0, 0, 0, 0]);
      // Without its pruned ranges the lineage would miss sequence numbers: the ranges are what the audit needed.
      const present = await n(sql`select count(distinct m.lineage_seq) as n from messages m join sessions s on s.id = m.session_id
                                 where s.lineage_id = ${id} and m.lineage_seq is not null`);
      const appended = await n(sql`select appended_count as n from lineages where id = ${id}`);
      expect(present, id).toBeLessThan(appended);
      expect((await rowsOf(id)).pruned, id).toBeGreaterThan(0);
    }
    // The lineages compact on after retention.
    await stack().client.append(rotate, messyTranscript('openai-chat', 77, 4).slice(1));
    expect((await stack().client.compact(await headOf(rotate), { force: true })).outcome).toBe('compacted');
    expect((await stack().client.operator.auditLineage(rotate)).lostMessages).toBe(0);
  });

  it('runs on a Temporal Schedule, which can be removed', async () => {
    const id = uniqueId('scheduled');
    await stack().client.createSession({ sessionId: id });
    await grow(id, 2);
    const scheduled = await stack().client.operator.scheduleRetention({ endedSessionDays: 0, auditDays: 0, appendKeyDays: 0 }, { every: '24h' });
    try {
      expect(scheduled.created).toBe(true);
      const handle = stack().temporal.schedule.getHandle(scheduled.scheduleId);
      let reached!: () => void;
      let release!: () => void;
      const reachedExport = new Promise<void>((resolve) => (reached = resolve));
      held = { reached, released: new Promise<void>((resolve) => (release = resolve)) };
      await handle.trigger();
      let workflowId: string | undefined;
      try {
        for (let i = 0; i < 100 && !workflowId; i++) {
          const action = (await handle.describe()).info.recentActions.at(-1)?.action;
          workflowId = action?.workflow.workflowId;
          if (!workflowId) await new Promise((r) => setTimeout(r, 100));
        }
        expect(workflowId).toBeDefined();
        // The scheduled run is held at its first export write: a manual run now would overlap it.
        await reachedExport;
        // Bounded: a run that started instead would wait for the held batch, never answering.
        let bound: NodeJS.Timeout | undefined;
        const refused = await Promise.race([
          stack()
            .client.operator.runRetention({ endedSessionDays: 0 })
            .then(
              () => undefined,
              (error: unknown) => error,
            ),
          new Promise((resolve) => (bound = setTimeout(() => resolve(new Error('no answer to the manual run within 30 s')), 30_000))),
        ]).finally(() => clearTimeout(bound));
        expect(refused).toBeInstanceOf(RetentionRunningError);
        expect((refused as RetentionRunningError).workflowId).toBe(workflowId);
      } finally {
        held = undefined;
        release();
      }
      const totals = (await stack().temporal.workflow.getHandle(workflowId!).result()) as { messages: number; appendKeys: number };
      expect(totals.messages).toBeGreaterThan(0);
      expect(await n(sql`select count(*) as n from append_keys where lineage_id = ${id}`)).toBe(0);
      expect(
        await n(sql`select count(*) as n from messages m join sessions s on s.id = m.session_id where s.lineage_id = ${id} and s.ended_at is not null`),
      ).toBe(0);
      expect((await stack().client.operator.auditLineage(id)).lostMessages).toBe(0);
    } finally {
      expect(await stack().client.operator.unscheduleRetention()).toBe(true);
    }
    expect(await stack().client.operator.unscheduleRetention()).toBe(false);
  });
});

describe('Temporal, after the erase', () => {
  it('no run of the erased lineage workflow is left (Temporal deletes them in the background)', async () => {
    expect(erasedRun && gone, 'the erase test ran').toBeTruthy();
    expect(await gone, `runs ${erasedRun!.runIds.join(', ')} of ${erasedRun!.workflowId} are deleted`).toBe(true);
  }, 150_000);
});
