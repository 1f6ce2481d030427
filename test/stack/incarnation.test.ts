/**
 * Lineage incarnations, on the real stack (issue 33, point 2): a lineage erased and created
 * again under the same id is another lineage, and nothing that belonged to the erased one
 * reaches it.
 *
 * - A forced compaction whose summary is still running when the lineage is erased (its summary
 *   call ignores the cancellation, like a worker that learnt nothing from its throttled
 *   heartbeats) goes on to its commit after the id was created again and filled with as many
 *   rows, at the same head and generation: the commit is stale and writes nothing (the job's
 *   row is gone, and the incarnation it began on differs).
 * - An old writer (a SessionsClient that learnt the erased incarnation) gets LineageErasedError
 *   for a new append, for a keyed resend of a batch acknowledged before the erase and for a
 *   replaceTail, and its compaction requests are refused the same way; nothing of them is
 *   stored, taken back or compacted. A client that creates the id again writes to the new lineage.
 * - A retried attempt that learnt the erased incarnation from its predecessor's heartbeat begins
 *   nothing on the new lineage (no audit row, no snapshot): directly against Postgres, and on the
 *   whole stack after a raw-SQL erase and re-creation that leaves the lineage's workflow running
 *   (attempt 1 partitioned, attempt 2 begins on nothing and pays for no summary; without the
 *   heartbeat's incarnation it compacted the new lineage).
 *
 * Rows are counted with this file's own SQL; the old job's activity is observed with this
 * file's own activity interceptor and heartbeat seam (the fault is asserted to have landed: the
 * old job reached its commit after the re-creation).
 */
import { Context } from '@temporalio/activity';
import { defaultPayloadConverter } from '@temporalio/common';
import type { ActivityInboundCallsInterceptor, ActivityExecuteInput, Next } from '@temporalio/worker';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createSummariser, type Summariser } from '../../src/activities/summariser';
import { SessionsClient } from '../../src/client';
import { loadConfig } from '../../src/config';
import { beginJob, commitCompaction, lineageOf } from '../../src/db/session-store';
import { dialectOf } from '../../src/compaction/dialects';
import { LineageErasedError, SessionCompactionError } from '../../src/errors';
import { messyTranscript } from '../support/messy';
import { uniqueId, useTestStack } from '../support/stack';

/** The summary calls this file holds: the first call of a lineage named in `held` waits for its release, ignoring cancellation. */
const held = new Map<string, { arrived: () => void; release: Promise<void> }>();
const extractive = createSummariser(loadConfig({}).llm, { stallTimeoutMs: 10_000, requestTimeoutMs: 10_000, streamTimeoutMs: 10_000 });
const holdingSummariser: Summariser = {
  model: 'fake-model',
  description: 'extractive, with summary calls this test holds',
  async summarise(request, context) {
    const { activityId: jobId, attempt } = Context.current().info;
    summaryCalls.set(`${jobId}#${attempt}`, (summaryCalls.get(`${jobId}#${attempt}`) ?? 0) + 1);
    const hold = [...held.entries()].find(([lineageId]) => jobId.includes(`/${lineageId}/`));
    if (hold) {
      held.delete(hold[0]);
      hold[1].arrived();
      await hold[1].release; // the cancellation signal is ignored on purpose
    }
    return { ...(await extractive.summarise(request, { ...context, signal: new AbortController().signal })), model: 'fake-model' };
  },
};

/** Summary calls per attempt (`<job id>#<attempt>`), counted by this file's summariser. */
const summaryCalls = new Map<string, number>();
/** Attempts (`<job id>#<attempt>`) whose heartbeats this file stops sending: a worker partitioned from Temporal. */
const silenced = new Set<string>();
/** How each attempt (`<job id>#<attempt>`) of a compaction activity ended. */
const attemptEnds = new Map<string, { outcome?: string; reason?: string; error?: string }>();

/** This file's ledger of compaction activities: each one's phases (from its heartbeats) and its end. */
const activities = new Map<string, { phases: string[]; ended?: { outcome?: string; reason?: string; error?: string } }>();
const entryOf = (activityId: string) => {
  let entry = activities.get(activityId);
  if (!entry) activities.set(activityId, (entry = { phases: [] }));
  return entry;
};
class Ledger implements ActivityInboundCallsInterceptor {
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const { activityId, activityType, attempt } = Context.current().info;
    try {
      const result = await next(input);
      if (activityType === 'compactSession') entryOf(activityId).ended = result as { outcome: string; reason?: string };
      if (activityType === 'compactSession') attemptEnds.set(`${activityId}#${attempt}`, result as { outcome: string; reason?: string });
      return result;
    } catch (error) {
      if (activityType === 'compactSession') entryOf(activityId).ended = { error: String(error) };
      if (activityType === 'compactSession') attemptEnds.set(`${activityId}#${attempt}`, { error: String(error) });
      throw error;
    }
  }
}

const stack = useTestStack({
  worker: {
    summariser: holdingSummariser,
    heartbeat: (details) => {
      const { activityId, attempt } = Context.current().info;
      entryOf(activityId).phases.push((details as { phase: string }).phase);
      if (!silenced.has(`${activityId}#${attempt}`)) Context.current().heartbeat(details);
    },
    workerOptions: { interceptors: { activity: [() => ({ inbound: new Ledger() })] } },
  },
});

const n = async (query: ReturnType<typeof sql>) => Number(((await stack().db.db.execute(query)).rows[0] as { n: string | number }).n);

/** Polls `check` until it holds (bounded). */
async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a lineage erased and created again', () => {
  it('nothing of a job running across the erase, nor of an old writer, reaches the new lineage', async () => {
    const id = uniqueId('incarnation');
    const oldWriter = await SessionsClient.connect({ config: stack().config });
    try {
      // The first lineage: an old writer fills it (a keyed batch, acknowledged).
      await stack().client.createSession({ sessionId: id });
      const oldBatch = messyTranscript('openai-chat', 31, 8);
      const acknowledged = await oldWriter.append(id, oldBatch, { appendKey: `${id}-turn-1` });
      expect(acknowledged).toMatchObject({ replayed: false, count: oldBatch.length });

      // A forced compaction whose summary is held; the erase lands while it runs.
      let arrived!: () => void;
      const summaryArrived = new Promise<void>((resolve) => (arrived = resolve));
      let release!: () => void;
      held.set(id, { arrived, release: new Promise<void>((resolve) => (release = resolve)) });
      const compacting = stack()
        .client.compact(id, { force: true })
        .then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
      await summaryArrived;
      const [oldJobId] = [...activities.keys()].filter((a) => a.includes(`/${id}/`));
      expect(oldJobId, 'the old job is running').toBeDefined();
      await stack().client.deleteLineage(id);
      const settled = await compacting;
      expect('error' in settled && settled.error, JSON.stringify(settled)).toBeInstanceOf(SessionCompactionError);

      // The same id again, filled by a new writer with as many rows: same head, generation 0.
      await stack().client.createSession({ sessionId: id });
      const newBatch = messyTranscript('openai-chat', 37, 8);
      expect(newBatch.length).toBe(oldBatch.length);
      await stack().client.append(id, newBatch);

      // The old writer: a new append and the keyed resend of the acknowledged batch are refused.
      await expect(oldWriter.append(id, [{ role: 'user', content: 'still there? {"retry":1}' }])).rejects.toBeInstanceOf(LineageErasedError);
      await expect(oldWriter.append(id, oldBatch, { appendKey: `${id}-turn-1` })).rejects.toBeInstanceOf(LineageErasedError);
      // Nor can it take back the new lineage's messages (a framework's pop) or replace them.
      await expect(oldWriter.replaceTail(id, { count: 2, replacement: [{ role: 'user', content: 'redo' }] })).rejects.toBeInstanceOf(LineageErasedError);
      // Nor compact it: a compaction it asks would be the new lineage's.
      await expect(oldWriter.compact(id, { force: true })).rejects.toBeInstanceOf(LineageErasedError);
      await expect(oldWriter.requestCompaction(id, { force: true })).rejects.toBeInstanceOf(LineageErasedError);

      // The old job's summary returns now: it goes on to its commit against the new lineage.
      release();
      await until('the old job to end', () => activities.get(oldJobId)?.ended !== undefined);
      const oldJob = activities.get(oldJobId)!;
      expect(oldJob.phases, 'the fault landed: the old job reached its commit after the re-creation').toContain('committing');
      expect(oldJob.ended).toMatchObject({ outcome: 'stale' });
      expect(oldJob.ended?.reason).toMatch(/erased/);

      // Own SQL: the new lineage holds exactly what the new writer appended, and no trace of the old job.
      expect(await n(sql`select count(*) as n from compactions where lineage_id = ${id}`)).toBe(0);
      expect(await n(sql`select count(*) as n from compactions where id = ${oldJobId}`)).toBe(0);
      expect(await n(sql`select count(*) as n from sessions where lineage_id = ${id}`)).toBe(1);
      expect(await n(sql`select generation as n from lineages where id = ${id}`)).toBe(0);
      expect(await n(sql`select count(*) as n from append_keys where lineage_id = ${id}`)).toBe(0);
      expect(await n(sql`select count(*) as n from messages where session_id like ${`${id}%`} and archived_at is not null`)).toBe(0);
      const { rows } = await stack().db.db.execute(sql`select body from messages where session_id like ${`${id}%`} order by session_id, seq`);
      expect(rows.map((r) => (r as { body: unknown }).body)).toEqual(newBatch);
      const audit = await stack().client.operator.auditLineage(id);
      expect([audit.forks, audit.lostMessages, audit.sequenceGaps, audit.duplicatedByKey]).toEqual([0, 0, 0, 0]);

      // A client that creates the id again writes to the new lineage; the new lineage compacts.
      await oldWriter.createSession({ sessionId: id });
      expect((await oldWriter.append(id, [{ role: 'user', content: 'new turn' }])).firstLineageSeq).toBe(newBatch.length + 1);
      expect((await stack().client.compact(id, { force: true })).outcome).toBe('compacted');
    } finally {
      held.delete(id);
      await oldWriter.close();
    }
  });

  it('a client forgets the lineage it used least recently, not every lineage at once: the one it keeps writing to stays protected', async () => {
    const [kept, forgotten, third] = [uniqueId('held'), uniqueId('held'), uniqueId('held')];
    const writer = await SessionsClient.connect({ config: stack().config });
    try {
      // A small bound, as if the client had written to 10,000 lineages.
      (writer as unknown as { maxHeld: number }).maxHeld = 2;
      for (const id of [kept, forgotten]) {
        await stack().client.createSession({ sessionId: id });
        await writer.append(id, [{ role: 'user', content: `first turn of ${id}` }]);
      }
      // `kept` is used again, then a third lineage pushes the least recently used one out.
      await writer.append(kept, [{ role: 'assistant', content: '{"status": "ok"}' }]);
      await stack().client.createSession({ sessionId: third });
      await writer.append(third, [{ role: 'user', content: 'hello' }]);
      const held = (writer as unknown as { held: Map<string, string> }).held;
      expect([...held.keys()]).toEqual([kept, third]);
      // Both erased and created again by another process.
      for (const id of [kept, forgotten]) {
        await stack().client.deleteLineage(id);
        await stack().client.createSession({ sessionId: id });
      }
      // The lineage it kept writing to is still held: its old incarnation is refused.
      await expect(writer.append(kept, [{ role: 'user', content: 'still there?' }])).rejects.toBeInstanceOf(LineageErasedError);
      expect(await n(sql`select count(*) as n from messages where session_id = ${kept}`)).toBe(0);
      // The forgotten one is learnt again as it is now (a bounded client cannot remember every lineage).
      expect((await writer.append(forgotten, [{ role: 'user', content: 'a new conversation' }])).firstLineageSeq).toBe(1);
    } finally {
      await writer.close();
    }
  });

  it('a retried attempt that learnt the erased incarnation begins nothing on the new lineage, and its commit is stale', async () => {
    const id = uniqueId('incarnation-retry');
    const db = stack().db.db;
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, messyTranscript('openai-chat', 33, 6));
    const job = { jobId: `${id}/run/1`, lineageId: id, parentSessionId: id, generation: 0, requestIds: ['r1'], trigger: 'update' };
    const first = await beginJob(db, job, 'fake-model', 1);
    if ('erased' in first) throw new Error('the first attempt began on an erased lineage');
    const learnt = first.lineage.incarnation;
    await stack().client.deleteLineage(id);
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, messyTranscript('openai-chat', 35, 6));
    expect((await lineageOf(db, id)).incarnation).not.toBe(learnt);

    const retried = await beginJob(db, { ...job, incarnation: learnt }, 'fake-model', 2);
    expect(retried).toMatchObject({ erased: true, headSessionId: id, generation: 0 });
    expect(await n(sql`select count(*) as n from compactions where lineage_id = ${id}`)).toBe(0);

    // Its commit, had it got there: stale, with the incarnation and without it (no job row).
    const commit = (incarnation?: string) =>
      commitCompaction(db, {
        job: { ...job, incarnation },
        attempt: 1,
        mode: 'rotate',
        dialect: dialectOf('openai-chat'),
        watermarkSeq: first.rows.at(-1)!.seq,
        snapshotRows: first.rows.length,
        compacted: [{ message: { role: 'user', content: 'the compacted head' }, tokens: 10 }],
        carried: [],
        stats: { tokensBefore: 100, messagesBefore: first.rows.length },
      });
    expect(await commit(learnt)).toMatchObject({ outcome: 'stale', reason: expect.stringContaining('erased and created again') });
    expect(await commit(undefined)).toMatchObject({ outcome: 'stale', reason: expect.stringContaining('audit row is gone') });
    expect(await n(sql`select count(*) as n from compactions where lineage_id = ${id}`)).toBe(0);
    expect(await n(sql`select generation as n from lineages where id = ${id}`)).toBe(0);
  });

  it("a retried attempt after a raw-SQL erase and re-creation begins on nothing: its predecessor's heartbeat named the erased incarnation", async () => {
    const id = uniqueId('incarnation-lease');
    const db = stack().db.db;
    await stack().client.createSession({ sessionId: id });
    const rows = messyTranscript('openai-chat', 31, 8);
    await stack().client.append(id, rows);
    const erasedIncarnation = (await lineageOf(db, id)).incarnation;
    let arrived!: () => void;
    const summaryArrived = new Promise<void>((resolve) => (arrived = resolve));
    let release!: () => void;
    held.set(id, { arrived, release: new Promise<void>((resolve) => (release = resolve)) });
    const compacting = stack()
      .client.compactAnswer(id, { force: true })
      .then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      );
    try {
      await summaryArrived;
      const [jobId] = [...activities.keys()].filter((a) => a.includes(`/${id}/`));
      // Attempt 1 summarises on; Temporal holds its heartbeat naming the incarnation it began on.
      const handle = stack().temporal.workflow.getHandle(stack().client.operator.workflowLocation(id).workflowId);
      await until('the heartbeat naming the incarnation', async () => {
        const { raw: described } = await handle.describe();
        const payloads = described.pendingActivities?.[0]?.heartbeatDetails?.payloads ?? [];
        if (payloads.length === 0) return false;
        const details = defaultPayloadConverter.fromPayload(payloads[0]) as { incarnation?: string };
        return details.incarnation === erasedIncarnation;
      });
      // Then it is partitioned (its lease runs out), and the lineage is erased and created again
      // through SQL, which leaves the workflow running, and filled with as many rows.
      silenced.add(`${jobId}#1`);
      await stack().db.pool.query('select session_erase($1, true)', [id]);
      await stack().db.pool.query('select session_create($1)', [id]);
      await stack().db.pool.query('select session_append($1, $2::jsonb)', [id, JSON.stringify(messyTranscript('openai-chat', 37, 8))]);

      // Attempt 2 (after the lease TTL) begins on the incarnation attempt 1 reported: nothing.
      const settled = await compacting;
      expect('result' in settled && settled.result, JSON.stringify(settled)).toMatchObject({ outcome: 'stale' });
      expect(attemptEnds.get(`${jobId}#2`), 'attempt 2 ran').toMatchObject({ outcome: 'stale', reason: expect.stringContaining('erased') });
      expect(summaryCalls.get(`${jobId}#2`) ?? 0, 'attempt 2 paid for no summary').toBe(0);
      expect(await n(sql`select count(*) as n from compactions where lineage_id = ${id}`)).toBe(0);

      // Attempt 1, released, reaches its commit: stale too.
      release();
      await until('attempt 1 to end', () => attemptEnds.has(`${jobId}#1`));
      expect(attemptEnds.get(`${jobId}#1`)).toMatchObject({ outcome: 'stale' });
      expect(await n(sql`select count(*) as n from compactions where lineage_id = ${id}`)).toBe(0);
      expect(await n(sql`select generation as n from lineages where id = ${id}`)).toBe(0);
      expect(await n(sql`select count(*) as n from sessions where lineage_id = ${id}`)).toBe(1);
    } finally {
      release?.();
      held.delete(id);
    }
  });
});
